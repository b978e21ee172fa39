/**
 * The spec's Field64 validity circuits (draft-irtf-cfrg-vdaf-20 §7.4; Python: vdaf.circuits)
 * that this SDK proves with: Count, Sum, SumVec (the Field64 SumVecWithMultiproof of the
 * test vectors), and the pieces dprec's own circuit shares with them: range-checked
 * integers (§7.4.2) and the bit test of `ParallelSum(Mul, c)`.
 *
 * Range-checked `0 <= v <= M`: b = bitlen(M) bits with weights 1, 2, ..., 2^(b-2) and
 * M - (2^(b-1) - 1). Bit test: call i of `ParallelSum(Mul, c)` gets
 * (r_i^j m_{ic+j}, m_{ic+j} - 1/s) for j = 1..c (entries past the end 0).
 */
import * as F from "./field64.js";
import { type Circuit, sharesInv } from "./flp.js";
import { type Gadget, Mul, ParallelSum, PolyEval } from "./gadgets.js";

export function bitLength(x: number): number {
  let b = 0;
  while (x > 0) {
    b++;
    x = Math.floor(x / 2);
  }
  return b;
}

/** The encodings of the integers `values` (each in [0, M]), concatenated, as 0/1 numbers. */
export function encodeRangeChecked(values: number[], maxValue: number): number[] {
  const bits = bitLength(maxValue);
  const allOnes = 2 ** (bits - 1) - 1;
  const out: number[] = [];
  for (const v of values) {
    if (!Number.isInteger(v) || v < 0 || v > maxValue) {
      throw new RangeError(`a value lies outside [0, ${maxValue}]`);
    }
    const big = v > allOnes;
    let rest = big ? v - (maxValue - allOnes) : v;
    for (let k = 0; k < bits - 1; k++) {
      out.push(rest % 2);
      rest = Math.floor(rest / 2);
    }
    out.push(big ? 1 : 0);
  }
  return out;
}

/** The weights of a range-checked encoding of [0, M]. */
export function rangeCheckedWeights(maxValue: number): F.Vec {
  const bits = bitLength(maxValue);
  const w: bigint[] = [];
  for (let k = 0; k < bits - 1; k++) w.push(1n << BigInt(k));
  w.push(BigInt(maxValue) - ((1n << BigInt(bits - 1)) - 1n));
  return F.fromInts(w);
}

/** The values of consecutive range-checked encodings of [0, M] (linear: on shares). */
export function decodeRangeChecked(encoded: F.Vec, maxValue: number): F.Vec {
  const w = rangeCheckedWeights(maxValue), b = F.len(w), n = F.len(encoded) / b;
  const out = F.zeros(n);
  for (let i = 0; i < n; i++) out.set(F.dot(F.slice(encoded, i * b, (i + 1) * b), w), 2 * i);
  return out;
}

/** out[i][j] = scale r_i^(j+1): the rows j of the (calls x count) power table. */
function powerRows(r: F.Vec, calls: number, count: number, scale: F.Vec): F.Vec[] {
  const rows: F.Vec[] = [];
  let prev = F.mul(F.slice(r, 0, calls), F.concat(Array(calls).fill(scale)));
  rows.push(prev);
  for (let j = 1; j < count; j++) {
    prev = F.mul(prev, F.slice(r, 0, calls));
    rows.push(prev);
  }
  return rows;
}

/** Entry (call i, position j) of `values` chunked by `chunk`, zero past the end, as row j. */
export function chunkRows(values: F.Vec, calls: number, chunk: number): F.Vec[] {
  const n = F.len(values);
  const rows: F.Vec[] = [];
  for (let j = 0; j < chunk; j++) {
    const row = F.zeros(calls);
    for (let i = 0; i < calls; i++) {
      const e = i * chunk + j;
      if (e < n) {
        row[2 * i] = values[2 * e]!;
        row[2 * i + 1] = values[2 * e + 1]!;
      }
    }
    rows.push(row);
  }
  return rows;
}

/** The 2 chunk input rows of `ParallelSum(Mul, chunk)` testing that `values` are bits. */
export function bitTestRows(values: F.Vec, jointRand: F.Vec, chunk: number, calls: number,
                            numShares: number): F.Vec[] {
  const m = chunkRows(values, calls, chunk);
  const powers = powerRows(jointRand, calls, chunk, F.fromInts([1]));
  const inv = F.concat(Array(calls).fill(sharesInv(numShares)));
  const rows: F.Vec[] = [];
  for (let j = 0; j < chunk; j++) rows.push(F.mul(powers[j]!, m[j]!), F.sub(m[j]!, inv));
  return rows;
}

/** The rows of the range gadget: weights scale r_i^(j+1) (0 past the entries), entries. */
export function weightedRows(entries: F.Vec, jointRand: F.Vec, chunk: number, calls: number,
                             scale: F.Vec): F.Vec[] {
  const n = F.len(entries);
  const w = powerRows(jointRand, calls, chunk, scale);
  const m = chunkRows(entries, calls, chunk);
  const rows: F.Vec[] = [];
  for (let j = 0; j < chunk; j++) {
    for (let i = 0; i < calls; i++) {
      if (i * chunk + j >= n) {
        w[j]![2 * i] = 0;
        w[j]![2 * i + 1] = 0;
      }
    }
    rows.push(w[j]!, m[j]!);
  }
  return rows;
}

export class Count implements Circuit {
  readonly measLen = 1;
  readonly jointRandLen = 0;
  readonly outputLen = 1;
  readonly evalOutputLen = 1;
  readonly gadgets: Gadget[] = [new Mul()];
  readonly gadgetCalls = [1];

  encode(measurement: number): F.Vec {
    if (measurement !== 0 && measurement !== 1) throw new RangeError("a count is 0 or 1");
    return F.fromInts([measurement]);
  }

  gadgetInputs(meas: F.Vec): F.Vec[][] {
    return [[F.slice(meas, 0, 1), F.slice(meas, 0, 1)]];
  }

  outputs(meas: F.Vec, _jr: F.Vec, _s: number, gadgetOutputs: F.Vec[]): F.Vec {
    return F.sub(F.slice(gadgetOutputs[0]!, 0, 1), F.slice(meas, 0, 1));
  }

  truncate(meas: F.Vec): F.Vec {
    return meas;
  }
}

/** A circuit of one PolyEval gadget called once per measurement element (Sum's bit test;
 * the reference's degree-3 test circuit). */
export class PolyEvalCircuit implements Circuit {
  readonly jointRandLen = 0;
  readonly outputLen = 1;
  readonly evalOutputLen: number;
  readonly gadgets: Gadget[];
  readonly gadgetCalls: number[];

  constructor(readonly measLen: number, coefficients: number[]) {
    this.gadgets = [new PolyEval(coefficients)];
    this.gadgetCalls = [measLen];
    this.evalOutputLen = measLen;
  }

  gadgetInputs(meas: F.Vec): F.Vec[][] {
    return [[meas.slice()]];
  }

  outputs(_meas: F.Vec, _jr: F.Vec, _s: number, gadgetOutputs: F.Vec[]): F.Vec {
    return gadgetOutputs[0]!;
  }

  truncate(meas: F.Vec): F.Vec {
    return meas;
  }
}

/** Prio3Sum's circuit: `0 <= v <= maxMeasurement` as range-checked bits. */
export class Sum extends PolyEvalCircuit {
  constructor(readonly maxMeasurement: number) {
    super(bitLength(maxMeasurement), [0, -1, 1]);
  }

  encode(measurement: number): F.Vec {
    return F.fromInts(encodeRangeChecked([measurement], this.maxMeasurement));
  }

  override truncate(meas: F.Vec): F.Vec {
    return decodeRangeChecked(meas, this.maxMeasurement);
  }
}

/** SumVec: `length` entries in [0, maxMeasurement], range-checked, one bit test. */
export class SumVec implements Circuit {
  readonly measLen: number;
  readonly jointRandLen: number;
  readonly outputLen: number;
  readonly evalOutputLen = 1;
  readonly gadgets: Gadget[];
  readonly gadgetCalls: number[];

  constructor(readonly length: number, readonly maxMeasurement: number,
              readonly chunkLength: number) {
    this.measLen = length * bitLength(maxMeasurement);
    const calls = Math.ceil(this.measLen / chunkLength);
    this.gadgets = [new ParallelSum(new Mul(), chunkLength)];
    this.gadgetCalls = [calls];
    this.jointRandLen = calls;
    this.outputLen = length;
  }

  encode(measurement: number[]): F.Vec {
    if (measurement.length !== this.length) throw new RangeError("incorrect measurement length");
    return F.fromInts(encodeRangeChecked(measurement, this.maxMeasurement));
  }

  gadgetInputs(meas: F.Vec, jointRand: F.Vec, numShares: number): F.Vec[][] {
    return [bitTestRows(meas, jointRand, this.chunkLength, this.gadgetCalls[0]!, numShares)];
  }

  outputs(_meas: F.Vec, _jr: F.Vec, _s: number, gadgetOutputs: F.Vec[]): F.Vec {
    return F.sum(gadgetOutputs[0]!);
  }

  truncate(meas: F.Vec): F.Vec {
    return decodeRangeChecked(meas, this.maxMeasurement);
  }
}
