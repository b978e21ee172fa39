/**
 * dprec's validity circuit for integer vectors on Field64 (Python:
 * vdaf.dprec_circuits.BoundedVector), the prover's side, with its "polynomial" and "bits"
 * range proofs (the two dp-pop uses: polynomial while high - low + 2 <= 64):
 *
 * - every coordinate y_j in [low, high]: polynomial, `ParallelSum(WeightedRange(low, high),
 *   c)` on (r_i^j / s, y_j); bits, y_j - low range-checked under the bit test;
 * - sum_j y_j - sum_low = e_s with e_s in [0, sum_high - sum_low] (range-checked slack);
 * - ||y||^2 + e_2 = B^2 with e_2 in [0, B^2], ||y||^2 from `ParallelSum(Mul, c)` on
 *   (y_j, y_j).
 *
 * The slack bits share the bit test. Gadget order: range, bits, squares; chunk sizes from
 * {@link bestChunk}.
 */
import * as F from "./field64.js";
import {
  bitLength, bitTestRows, chunkRows, decodeRangeChecked, encodeRangeChecked, rangeCheckedWeights,
  weightedRows,
} from "./circuits.js";
import { type Circuit, gadgetPolyLen, sharesInv, wirePolyLen } from "./flp.js";
import { type Gadget, Mul, ParallelSum, WeightedRange } from "./gadgets.js";

/** Largest range-gadget degree chosen by default (prover cost ~ degree^2 d). */
export const MAX_POLYNOMIAL_DEGREE = 64;

/** The chunk c minimising arity c + D (p - 1) + 1 over `length` entries, ties to the
 * smaller c. */
export function bestChunk(length: number, arity: number, degree: number): number {
  let best = 1, bestCost = Infinity;
  for (let c = 1; c <= length; c++) {
    const cost = arity * c + gadgetPolyLen(degree, wirePolyLen(Math.ceil(length / c)));
    if (cost < bestCost) {
      best = c;
      bestCost = cost;
    }
  }
  return best;
}

export interface BoundedVectorSpec {
  readonly dimension: number;
  readonly low: number;
  readonly high: number;
  readonly sumRange?: readonly [number, number] | null;
  readonly l2BoundSq?: number | null;
}

type Role = "range" | "bits" | "squares";

export class BoundedVector implements Circuit {
  readonly dimension: number;
  readonly low: number;
  readonly high: number;
  readonly sumRange: readonly [number, number] | null;
  readonly l2BoundSq: number | null;
  readonly rangeProof: "polynomial" | "bits";
  readonly measLen: number;
  readonly jointRandLen: number;
  readonly outputLen: number;
  readonly evalOutputLen: number;
  readonly gadgets: Gadget[] = [];
  readonly gadgetCalls: number[] = [];
  readonly roles: Role[] = [];
  private readonly coordBits: number;
  private readonly sumBits: number;
  private readonly l2Bits: number;
  private readonly bitOffset: number;
  private readonly bitCount: number;

  constructor(spec: BoundedVectorSpec) {
    const { dimension: d, low, high } = spec;
    if (!(Number.isInteger(d) && d >= 1 && Number.isInteger(low) && Number.isInteger(high) && low <= high)) {
      throw new RangeError("need an integer dimension >= 1 and integers low <= high");
    }
    this.dimension = d;
    this.low = low;
    this.high = high;
    this.sumRange = spec.sumRange ?? null;
    this.l2BoundSq = spec.l2BoundSq ?? null;
    const largest = Math.max(Math.abs(low), Math.abs(high));
    if (BigInt(d) * BigInt(largest) ** 2n >= F.P / 4n ||
        (this.l2BoundSq !== null && BigInt(this.l2BoundSq) >= F.P / 4n)) {
      throw new RangeError("the bounds could wrap the field: use smaller ranges");
    }
    if (this.sumRange !== null && this.sumRange[1] < this.sumRange[0]) throw new RangeError("empty sum range");
    this.rangeProof = high - low + 2 <= MAX_POLYNOMIAL_DEGREE ? "polynomial" : "bits";
    this.coordBits = this.rangeProof === "bits" ? bitLength(high - low) : 0;
    const width = this.coordBits || 1;
    const sumMax = this.sumRange === null ? 0 : this.sumRange[1] - this.sumRange[0];
    this.sumBits = bitLength(sumMax);
    this.l2Bits = this.l2BoundSq ? bitLength(this.l2BoundSq) : 0;
    const coords = d * width;
    this.measLen = coords + this.sumBits + this.l2Bits;
    this.outputLen = d;
    let jr = 0;
    if (this.rangeProof === "polynomial") {
      const g = new WeightedRange(low, high);
      const c = bestChunk(coords, 2, g.degree);
      this.add(new ParallelSum(g, c), Math.ceil(coords / c), "range");
      jr += this.gadgetCalls[this.gadgetCalls.length - 1]!;
    }
    this.bitCount = (this.coordBits ? coords : 0) + this.sumBits + this.l2Bits;
    this.bitOffset = this.coordBits ? 0 : coords;
    if (this.bitCount) {
      const c = bestChunk(this.bitCount, 2, 2);
      this.add(new ParallelSum(new Mul(), c), Math.ceil(this.bitCount / c), "bits");
      jr += this.gadgetCalls[this.gadgetCalls.length - 1]!;
    }
    if (this.l2BoundSq !== null) {
      const c = bestChunk(d, 2, 2);
      this.add(new ParallelSum(new Mul(), c), Math.ceil(d / c), "squares");
    }
    this.jointRandLen = jr;
    this.evalOutputLen = this.roles.filter((r) => r !== "squares").length +
      (this.sumRange !== null ? 1 : 0) + (this.l2BoundSq !== null ? 1 : 0);
  }

  private add(g: Gadget, calls: number, role: Role): void {
    this.gadgets.push(g);
    this.gadgetCalls.push(calls);
    this.roles.push(role);
  }

  /** Why the integer vector y breaks the circuit ("range", "sum", "l2"), or "" if it holds. */
  refusal(y: ArrayLike<number>): "" | "range" | "sum" | "l2" {
    if (y.length !== this.dimension) return "range";
    let total = 0, norm = 0;
    for (let j = 0; j < y.length; j++) {
      const v = y[j]!;
      if (!Number.isInteger(v) || v < this.low || v > this.high) return "range";
      total += v;
      norm += v * v;
    }
    if (this.sumRange !== null && (total < this.sumRange[0] || total > this.sumRange[1])) return "sum";
    if (this.l2BoundSq !== null && norm > this.l2BoundSq) return "l2";
    return "";
  }

  /** The field encoding of the integer vector y; RangeError if y breaks a bound. */
  encode(y: ArrayLike<number>): F.Vec {
    const why = this.refusal(y);
    if (why) throw new RangeError(`the vector breaks the ${why} bound`);
    const ys = Array.from(y);
    const parts: F.Vec[] = [];
    parts.push(this.rangeProof === "polynomial" ? F.fromInts(ys)
      : F.fromInts(encodeRangeChecked(ys.map((v) => v - this.low), this.high - this.low)));
    const total = ys.reduce((s, v) => s + v, 0);
    const norm = ys.reduce((s, v) => s + v * v, 0);
    if (this.sumRange !== null && this.sumBits) {
      parts.push(F.fromInts(encodeRangeChecked([total - this.sumRange[0]], this.sumRange[1] - this.sumRange[0])));
    }
    if (this.l2BoundSq !== null && this.l2Bits) {
      parts.push(F.fromInts(encodeRangeChecked([this.l2BoundSq - norm], this.l2BoundSq)));
    }
    return F.concat(parts);
  }

  /** The (share of the) vector y from the (share of the) encoding: linear. */
  values(meas: F.Vec, numShares: number): F.Vec {
    if (this.rangeProof === "polynomial") return F.slice(meas, 0, this.dimension);
    const w = rangeCheckedWeights(this.high - this.low), width = this.coordBits;
    const offset = F.mul(F.fromInts([this.low]), sharesInv(numShares));
    const out = F.zeros(this.dimension);
    for (let j = 0; j < this.dimension; j++) {
      const e = F.dot(F.slice(meas, j * width, (j + 1) * width), w);
      F.addTo(out, 2 * j, e[0]!, e[1]!, offset[0]!, offset[1]!);
    }
    return out;
  }

  gadgetInputs(meas: F.Vec, jointRand: F.Vec, numShares: number): F.Vec[][] {
    const inv = sharesInv(numShares);
    const inputs: F.Vec[][] = [];
    let at = 0;
    this.gadgets.forEach((g, gi) => {
      const c = (g as ParallelSum).count, calls = this.gadgetCalls[gi]!, role = this.roles[gi]!;
      if (role === "range") {
        inputs.push(weightedRows(F.slice(meas, 0, this.dimension), F.slice(jointRand, at, at + calls), c, calls, inv));
        at += calls;
      } else if (role === "bits") {
        const bits = F.slice(meas, this.bitOffset, this.bitOffset + this.bitCount);
        inputs.push(bitTestRows(bits, F.slice(jointRand, at, at + calls), c, calls, numShares));
        at += calls;
      } else {
        const y = this.values(meas, numShares);
        inputs.push(chunkRows(y, calls, c).flatMap((r) => [r, r]));
      }
    });
    return inputs;
  }

  outputs(meas: F.Vec, _jr: F.Vec, numShares: number, gadgetOutputs: F.Vec[]): F.Vec {
    const inv = sharesInv(numShares);
    const out = gadgetOutputs.filter((_, i) => this.roles[i] !== "squares").map((o) => F.sum(o));
    const y = this.values(meas, numShares);
    let at = this.measLen - this.sumBits - this.l2Bits;
    if (this.sumRange !== null) {
      let total = F.sub(F.sum(y), F.mul(F.fromInts([this.sumRange[0]]), inv));
      if (this.sumBits) {
        total = F.sub(total, decodeRangeChecked(F.slice(meas, at, at + this.sumBits),
          this.sumRange[1] - this.sumRange[0]));
      }
      out.push(total);
      at += this.sumBits;
    }
    if (this.l2BoundSq !== null) {
      const squares = F.sum(gadgetOutputs[this.roles.indexOf("squares")]!);
      let check = F.sub(squares, F.mul(F.fromInts([this.l2BoundSq]), inv));
      if (this.l2Bits) {
        check = F.add(check, decodeRangeChecked(F.slice(meas, at, at + this.l2Bits), this.l2BoundSq));
      }
      out.push(check);
    }
    return F.concat(out);
  }

  /** y (polynomial range) or y - low (bits: the sum adds low once per report). */
  truncate(meas: F.Vec): F.Vec {
    if (this.rangeProof === "polynomial") return F.slice(meas, 0, this.dimension);
    return F.sub(this.values(meas, 1), F.fromInts(Array(this.dimension).fill(this.low)));
  }
}
