/**
 * Polynomials over Field64 held by their values on the n-th roots of unity x_i = w_n^i in
 * natural order (draft-irtf-cfrg-vdaf-20 §7.3; Python: vdaf.polynomial):
 *
 * - {@link ntt}: coefficients -> values at w_n^0..w_n^(n-1) (radix-2 Cooley-Tukey on the
 *   bit-reversed row; a row of k < n coefficients is spread first, which is the first
 *   log2(n/k) levels done at once: a pruned NTT, the same values).
 * - {@link intt}: values on the n-th roots -> coefficients.
 * - {@link valuesOnLargerDomain}: values on the p-th roots -> values on the n-th roots.
 */
import * as F from "./field64.js";
import { wasmKernel } from "./wasm64.js";

export function nextPowerOf2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

const twiddleCache = new Map<number, F.Vec>();
const inverseCache = new Map<number, F.Vec>();

/** 1/n in the field, as a 1-element vector (cached). */
function inverseOf(n: number): F.Vec {
  let inv = inverseCache.get(n);
  if (inv === undefined) {
    inv = F.fromInts([F.invB(BigInt(n))]);
    inverseCache.set(n, inv);
  }
  return inv;
}

/** w_m^j for every level m <= n, level m at offset m/2 - 1. */
function twiddles(n: number): F.Vec {
  let t = twiddleCache.get(n);
  if (t === undefined) {
    const parts: F.Vec[] = [];
    for (let m = 2; m <= n; m *= 2) parts.push(F.powers(F.root(m), m / 2));
    t = F.concat(parts);
    twiddleCache.set(n, t);
  }
  return t;
}

function bitReverse(i: number, bits: number): number {
  let r = 0;
  for (let b = 0; b < bits; b++) r |= ((i >>> b) & 1) << (bits - 1 - b);
  return r;
}

/** Values at the n-th roots of the polynomial with coefficients `coeffs` (at most n, lowest
 * first). */
export function ntt(coeffs: F.Vec, n: number): F.Vec {
  const count = F.len(coeffs);
  if (count > n) throw new RangeError(`${count} coefficients do not fit ${n} points`);
  const k = Math.min(nextPowerOf2(Math.max(count, 1)), n);
  const bits = Math.log2(k) | 0;
  const rep = n / k;
  const a = F.zeros(n);
  for (let j = 0; j < k; j++) {
    const src = bitReverse(j, bits);
    if (src >= count) continue;
    const lo = coeffs[2 * src]!, hi = coeffs[2 * src + 1]!;
    for (let r = 0; r < rep; r++) {
      a[2 * (j * rep + r)] = lo;
      a[2 * (j * rep + r) + 1] = hi;
    }
  }
  const tw = twiddles(n);
  if (butterfliesWasm(a, n, 2 * rep, tw)) return a;
  const v = F.zeros(1);
  for (let m = 2 * rep; m <= n; m *= 2) {
    const half = m / 2, base = half - 1;
    for (let start = 0; start < n; start += m) {
      for (let j = 0; j < half; j++) {
        const u = 2 * (start + j), w = 2 * (start + j + half), t = 2 * (base + j);
        F.mulTo(v, 0, a[w]!, a[w + 1]!, tw[t]!, tw[t + 1]!);
        const ul = a[u]!, uh = a[u + 1]!;
        F.addTo(a, u, ul, uh, v[0]!, v[1]!);
        F.subTo(a, w, ul, uh, v[0]!, v[1]!);
      }
    }
  }
  return a;
}

/** The levels m = first..n of a in WebAssembly (wasm64.ts); false where it cannot run. */
function butterfliesWasm(a: F.Vec, n: number, first: number, tw: F.Vec): boolean {
  const k = wasmKernel();
  if (k === null) return false;
  const need = 16 * n;
  if (k.memory.buffer.byteLength < need) {
    k.memory.grow(Math.ceil((need - k.memory.buffer.byteLength) / 65536));
  }
  const mem = new Int32Array(k.memory.buffer);
  mem.set(a, 0);
  mem.set(tw, 2 * n);
  k.bf(0, n, first, 8 * n);
  a.set(mem.subarray(0, 2 * n));
  return true;
}

/** Coefficients of the polynomial (degree < n) with the given values on the n-th roots. */
export function intt(values: F.Vec): F.Vec {
  const n = F.len(values);
  const out = ntt(values, n);
  const inv = inverseOf(n);
  const res = F.zeros(n);
  for (let i = 0; i < n; i++) {
    const s = (n - i) % n; // w^-i = w^(n - i)
    F.mulTo(res, 2 * i, out[2 * s]!, out[2 * s + 1]!, inv[0]!, inv[1]!);
  }
  return res;
}

/** Values on the n-th roots of the polynomial given by its values on the len-th roots. */
export function valuesOnLargerDomain(values: F.Vec, n: number): F.Vec {
  return ntt(intt(values), n);
}
