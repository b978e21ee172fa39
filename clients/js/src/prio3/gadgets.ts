/**
 * The FLP's gadgets (draft-irtf-cfrg-vdaf-20 §7.3.2; Python: vdaf.gadgets), evaluated on N
 * points at once: `evaluate(rows, n)` takes ARITY rows (input wire j at the N points) and
 * returns the N outputs.
 *
 * - {@link Mul}: x0 x1 (degree 2).
 * - {@link PolyEval}: q(x0) for a fixed integer polynomial q.
 * - {@link WeightedRange} (dprec's): x0 prod_{k=lo}^{hi} (x1 - k), degree hi - lo + 2, with
 *   k paired with lo + hi - k: (x - k)(x - (s - k)) = u + k (s - k), u = x^2 - s x.
 * - {@link ParallelSum}: the sum of `count` copies of a subcircuit on consecutive inputs.
 */
import * as F from "./field64.js";
import { wasmKernel } from "./wasm64.js";

export interface Gadget {
  readonly arity: number;
  readonly degree: number;
  evaluate(rows: F.Vec[], n: number): F.Vec;
}

export class Mul implements Gadget {
  readonly arity = 2;
  readonly degree = 2;

  evaluate(rows: F.Vec[], n: number): F.Vec {
    return F.mul(rows[0]!.subarray(0, 2 * n), rows[1]!.subarray(0, 2 * n));
  }
}

export class PolyEval implements Gadget {
  readonly arity = 1;
  readonly degree: number;
  private readonly coeffs: F.Vec;

  constructor(coefficients: number[]) {
    const c = coefficients.slice();
    while (c.length > 0 && c[c.length - 1] === 0) c.pop();
    if (c.length === 0) throw new RangeError("invalid polynomial: zero length");
    this.degree = c.length - 1;
    this.coeffs = F.fromInts(c);
  }

  evaluate(rows: F.Vec[], n: number): F.Vec {
    const x = rows[0]!, c = this.coeffs, top = F.len(c) - 1;
    const out = F.zeros(n);
    for (let t = 0; t < n; t++) {
      out[2 * t] = c[2 * top]!;
      out[2 * t + 1] = c[2 * top + 1]!;
      for (let k = top - 1; k >= 0; k--) {
        F.mulTo(out, 2 * t, out[2 * t]!, out[2 * t + 1]!, x[2 * t]!, x[2 * t + 1]!);
        F.addTo(out, 2 * t, out[2 * t]!, out[2 * t + 1]!, c[2 * k]!, c[2 * k + 1]!);
      }
    }
    return out;
  }
}

/** Pairs of pair constants (c_a, c_b) of {@link WeightedRange}: (u + c_a)(u + c_b) =
 * u^2 + (c_a + c_b) u + c_a c_b, the middle term a multiplication by a small integer. */
interface Quads {
  readonly small: number[]; // |c_a + c_b| (< 2^20)
  readonly negative: boolean[];
  readonly constant: F.Vec; // c_a c_b mod p
}

const SMALL = 2 ** 20;

function quadsOf(pairs: bigint[]): Quads | null {
  const small: number[] = [], negative: boolean[] = [], constant: bigint[] = [];
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const s = pairs[i]! + pairs[i + 1]!;
    if (s >= BigInt(SMALL) || -s >= BigInt(SMALL)) return null;
    small.push(Number(s < 0n ? -s : s));
    negative.push(s < 0n);
    constant.push(pairs[i]! * pairs[i + 1]!);
  }
  return { small, negative, constant: F.fromInts(constant) };
}

export class WeightedRange implements Gadget {
  readonly arity = 2;
  readonly degree: number;
  private readonly total: F.Vec;
  private readonly pairs: F.Vec;
  private readonly quads: Quads | null;
  private readonly middle: F.Vec | null;

  constructor(readonly low: number, readonly high: number) {
    if (high < low) throw new RangeError("empty range");
    this.degree = high - low + 2;
    const total = low + high;
    const pairs: bigint[] = [];
    for (let k = low; k < Math.floor((low + high + 1) / 2); k++) {
      pairs.push(BigInt(k) * BigInt(total - k));
    }
    this.total = F.fromInts([total]);
    this.pairs = F.fromInts(pairs);
    this.quads = quadsOf(pairs);
    this.middle = (high - low + 1) % 2 === 1 ? F.fromInts([Math.floor(total / 2)]) : null;
  }

  /** out[t] += x0[t] prod (x1[t] - k), for t < n. */
  accumulate(x0: F.Vec, x1: F.Vec, n: number, out: F.Vec): void {
    const s = this.total, pairs = this.pairs, np = F.len(pairs), mid = this.middle;
    const q = this.quads, nq = q === null ? 0 : q.small.length;
    const u = F.zeros(1), v = F.zeros(1), acc = F.zeros(1), tmp = F.zeros(1);
    for (let t = 0; t < n; t++) {
      const xl = x1[2 * t]!, xh = x1[2 * t + 1]!;
      F.mulTo(u, 0, xl, xh, xl, xh);
      F.mulTo(tmp, 0, s[0]!, s[1]!, xl, xh);
      F.subTo(u, 0, u[0]!, u[1]!, tmp[0]!, tmp[1]!);
      acc[0] = x0[2 * t]!;
      acc[1] = x0[2 * t + 1]!;
      if (mid !== null) {
        F.subTo(tmp, 0, xl, xh, mid[0]!, mid[1]!);
        F.mulTo(acc, 0, acc[0]!, acc[1]!, tmp[0]!, tmp[1]!);
      }
      const ul = u[0]!, uh = u[1]!;
      let k = 0;
      if (q !== null) {
        F.mulTo(v, 0, ul, uh, ul, uh);
        const vl = v[0]!, vh = v[1]!, qc = q.constant;
        for (let i = 0; i < nq; i++) {
          F.mulSmallTo(tmp, 0, ul, uh, q.small[i]!);
          if (q.negative[i]) F.subTo(tmp, 0, vl, vh, tmp[0]!, tmp[1]!);
          else F.addTo(tmp, 0, vl, vh, tmp[0]!, tmp[1]!);
          F.addTo(tmp, 0, tmp[0]!, tmp[1]!, qc[2 * i]!, qc[2 * i + 1]!);
          F.mulTo(acc, 0, acc[0]!, acc[1]!, tmp[0]!, tmp[1]!);
        }
        k = 2 * nq;
      }
      for (; k < np; k++) {
        F.addTo(tmp, 0, ul, uh, pairs[2 * k]!, pairs[2 * k + 1]!);
        F.mulTo(acc, 0, acc[0]!, acc[1]!, tmp[0]!, tmp[1]!);
      }
      F.addTo(out, 2 * t, out[2 * t]!, out[2 * t + 1]!, acc[0]!, acc[1]!);
    }
  }

  evaluate(rows: F.Vec[], n: number): F.Vec {
    const out = F.zeros(n);
    this.accumulateCopies(rows, 1, n, out);
    return out;
  }

  /** out[t] += the gadget on rows (2c, 2c + 1) for every copy c < count: in WebAssembly
   * where it runs (wasm64.ts), else in JavaScript; the same field elements. */
  accumulateCopies(rows: F.Vec[], count: number, n: number, out: F.Vec): void {
    const k = wasmKernel();
    if (k === null) {
      for (let c = 0; c < count; c++) this.accumulate(rows[2 * c]!, rows[2 * c + 1]!, n, out);
      return;
    }
    const np = F.len(this.pairs), o = 16 + 8 * np, a = o + 8 * n, b = a + 8 * n;
    const need = b + 8 * n;
    if (k.memory.buffer.byteLength < need) {
      k.memory.grow(Math.ceil((need - k.memory.buffer.byteLength) / 65536));
    }
    const mem = new Int32Array(k.memory.buffer);
    mem.set(this.total, 0);
    mem.set(this.middle ?? F.zeros(1), 2);
    mem.set(this.pairs, 4);
    mem.set(out.subarray(0, 2 * n), o / 4);
    for (let c = 0; c < count; c++) {
      mem.set(rows[2 * c]!.subarray(0, 2 * n), a / 4);
      mem.set(rows[2 * c + 1]!.subarray(0, 2 * n), b / 4);
      k.wr(a, b, n, o, 16, np, 0, this.middle === null ? 0 : 1);
    }
    out.set(mem.subarray(o / 4, o / 4 + 2 * n));
  }
}

export class ParallelSum implements Gadget {
  readonly arity: number;
  readonly degree: number;

  constructor(readonly subcircuit: Gadget, readonly count: number) {
    if (count < 1) throw new RangeError("count must be >= 1");
    this.arity = subcircuit.arity * count;
    this.degree = subcircuit.degree;
  }

  evaluate(rows: F.Vec[], n: number): F.Vec {
    const a = this.subcircuit.arity;
    const out = F.zeros(n);
    const sub = this.subcircuit;
    if (sub instanceof WeightedRange) {
      sub.accumulateCopies(rows, this.count, n, out);
      return out;
    }
    for (let c = 0; c < this.count; c++) {
      const part = sub.evaluate(rows.slice(c * a, c * a + a), n);
      for (let i = 0; i < 2 * n; i += 2) F.addTo(out, i, out[i]!, out[i + 1]!, part[i]!, part[i + 1]!);
    }
    return out;
  }
}
