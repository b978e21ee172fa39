/**
 * FMF-LDP's device step (Python: dprec.systems.fmf.deploy.FmfDeployment.client_step and
 * fmf.client.FederatedClients on a population of one; Algorithm 1 of the paper):
 *
 * 1. x_u = (V^T V + V^T (C_u - I) V + lambda I)^-1 V^T C_u p(u), c_ui = 1 + alpha r_ui,
 *    p_ui = 1[r_ui > 0] (Eq. 4; Cholesky), from the broadcast V and the true history;
 * 2. k cells (item, factor): i.i.d. uniform items in [0, N) and factors in [0, F)
 *    (cells = chosen), or the proxy-checked cells of the client's token (cells = assigned,
 *    fmf_cells.ts);
 * 3. per cell the gradient entry g = c_ui (p_ui - x_u . v_i) x_uf (Eq. 5), clipped to
 *    [-clip, clip] and scaled to x = g / clip in [-1, 1];
 * 4. the report: binary, one bit with P(1) = (1 + x tanh(eps/2)) / 2 (GradientReports,
 *    kind 1); or piecewise (Wang et al. 2019, Algorithm 2), one float32 in [-C, C],
 *    C = 1 + 2 / (e^(eps/2) - 1) (ValueReports, kind 4).
 *
 * Mechanism `none` (the clipped gradient in the clear) is refused on a device.
 */
import { DprecError } from "../errors.js";
import { encodeGradientReports, encodeValueReports } from "../wire/reports.js";
import { type History, type CheckedHistory, checkHistory } from "./history.js";
import { choleskySolve } from "./linalg.js";
import { assignedCells, roundSeed } from "./fmf_cells.js";
import type { RandomSource } from "../random.js";

export type FmfMechanism = "binary" | "piecewise";

/** What the step needs of the protocol terms (read under the device policy). */
export interface FmfStepTerms {
  readonly nItems: number;
  readonly factors: number;
  readonly k: number;
  readonly alpha: number;
  readonly regularization: number;
  readonly clip: number;
  readonly mechanism: FmfMechanism;
  readonly epsilon: number;
  readonly cells: "chosen" | "assigned";
  /** cells = assigned: the proxy's 32-byte token for this client (parseCellsToken). */
  readonly cellsToken?: Uint8Array;
}

/** The broadcast V: `rows x cols`, row-major (float32 from ItemMatrix, float64 from
 * ItemMatrix64: cells = assigned hashes V and needs the server's float64 V). */
export interface ItemFactors {
  readonly rows: number;
  readonly cols: number;
  readonly matrix: Float32Array | Float64Array;
}

function checkTerms(t: FmfStepTerms): void {
  const ints: [string, number, number, number][] = [
    ["nItems", t.nItems, 1, 1 << 24], ["factors", t.factors, 1, 255], ["k", t.k, 1, 65536]];
  for (const [name, v, lo, hi] of ints) {
    if (!Number.isInteger(v) || v < lo || v > hi) {
      throw new DprecError(`${name} must be an integer in [${lo}, ${hi}], got ${v}`);
    }
  }
  const reals: [string, number, boolean][] = [["alpha", t.alpha, false],
    ["regularization", t.regularization, true], ["clip", t.clip, true], ["epsilon", t.epsilon, true]];
  for (const [name, v, strict] of reals) {
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (strict && v === 0)) {
      throw new DprecError(`${name} must be a finite number ${strict ? ">" : ">="} 0, got ${v}`);
    }
  }
  if (t.mechanism !== "binary" && t.mechanism !== "piecewise") {
    throw new DprecError(`mechanism must be binary or piecewise on a device, got ` +
      `${String(t.mechanism)} (none sends the gradient in the clear)`);
  }
}

/** V as float64 after checking its shape and that every entry is finite. */
export function checkItemFactors(V: ItemFactors, nItems: number, factors: number): Float64Array {
  if (V.rows !== nItems || V.cols !== factors || V.matrix.length !== nItems * factors) {
    throw new DprecError(`the item matrix must be (${nItems}, ${factors}), got (${V.rows}, ${V.cols})`);
  }
  const out = Float64Array.from(V.matrix);
  for (const v of out) if (!Number.isFinite(v)) throw new DprecError("the item matrix must hold finite floats");
  return out;
}

/** x_u of Eq. 4 (Hu et al.'s implicit ALS, one user). */
export function userVector(V: Float64Array, f: number, h: CheckedHistory, alpha: number,
                           reg: number): Float64Array {
  const n = V.length / f;
  const A = new Float64Array(f * f);
  for (let i = 0; i < n; i++) {
    for (let a = 0; a < f; a++) {
      const va = V[i * f + a]!;
      for (let b = 0; b <= a; b++) A[a * f + b]! += va * V[i * f + b]!;
    }
  }
  const rhs = new Float64Array(f);
  for (let j = 0; j < h.items.length; j++) {
    const i = h.items[j]!;
    const r = h.values[j]!;
    for (let a = 0; a < f; a++) {
      const va = V[i * f + a]!;
      rhs[a]! += (1 + alpha * r) * va;
      for (let b = 0; b <= a; b++) A[a * f + b]! += alpha * r * va * V[i * f + b]!;
    }
  }
  for (let a = 0; a < f; a++) {
    A[a * f + a]! += reg;
    for (let b = 0; b < a; b++) A[b * f + a] = A[a * f + b]!;
  }
  return choleskySolve(A, rhs, f);
}

/** The sampled gradient entries, clipped and scaled into [-1, 1]. */
export function scaledEntries(V: Float64Array, f: number, x: Float64Array, h: CheckedHistory,
                              items: Int32Array, factors: Uint8Array, alpha: number,
                              clip: number): Float64Array {
  const rating = new Map<number, number>();
  h.items.forEach((i, j) => rating.set(i, h.values[j]!));
  const out = new Float64Array(items.length);
  for (let s = 0; s < items.length; s++) {
    const i = items[s]!;
    const r = rating.get(i) ?? 0;
    let dot = 0;
    for (let a = 0; a < f; a++) dot += x[a]! * V[i * f + a]!;
    const g = (1 + alpha * r) * ((r > 0 ? 1 : 0) - dot) * x[factors[s]!]!;
    out[s] = Math.min(clip, Math.max(-clip, g)) / clip;
  }
  return out;
}

/** One-bit reports: P(1 | x) = (1 + x tanh(eps/2)) / 2 (Python: BinaryMechanism). */
export function binaryBits(x: Float64Array, epsilon: number, source: RandomSource): Uint8Array {
  const t = Math.tanh(epsilon / 2);
  return Uint8Array.from(x, (v) => (source.uniform() < 0.5 * (1 + v * t) ? 1 : 0));
}

/** Piecewise reports in [-C, C], unbiased for x (Python: PiecewiseMechanism.sample). */
export function piecewiseValues(x: Float64Array, epsilon: number, source: RandomSource):
    Float64Array {
  const width = 2 / Math.expm1(epsilon / 2);
  const c = 1 + width;
  const half = 0.5 * width;
  const centerProb = 1 / (1 + Math.exp(-epsilon / 2));
  return Float64Array.from(x, (v) => {
    const left = v + half * (v - 1);
    const right = v + half * (v + 1);
    const center = source.uniform() < centerProb;
    const u = source.uniform();
    if (center) return left + (right - left) * u;
    const w = u * (c + 1); // the two outer pieces laid end to end on [0, C + 1)
    const leftLen = left + c;
    return w < leftLen ? w - c : right + (w - leftLen);
  });
}

/** The device's message for one round (GradientReports or ValueReports, `clientId`). */
export function fmfStep(terms: FmfStepTerms, history: History, V: ItemFactors,
                        clientId: bigint | number, source: RandomSource): Uint8Array {
  checkTerms(terms);
  const { nItems, factors: f, k } = terms;
  const v = checkItemFactors(V, nItems, f);
  const h = checkHistory(history, nItems);
  const x = userVector(v, f, h, terms.alpha, terms.regularization);
  let items: Int32Array;
  let factors: Uint8Array;
  if (terms.cells === "assigned") {
    if (!(V.matrix instanceof Float64Array)) {
      throw new DprecError("cells=assigned hashes the server's float64 V: fetch item-matrix-f64");
    }
    if (terms.cellsToken === undefined) {
      throw new DprecError("cells=assigned needs the device's cells token from the proxy");
    }
    ({ items, factors } = assignedCells(roundSeed(v, nItems, f), terms.cellsToken, k, nItems, f));
  } else {
    items = Int32Array.from({ length: k }, () => source.integers(nItems));
    factors = Uint8Array.from({ length: k }, () => source.integers(f));
  }
  const scaled = scaledEntries(v, f, x, h, items, factors, terms.alpha, terms.clip);
  if (terms.mechanism === "binary") {
    return encodeGradientReports({ clientId, items, factors,
      bits: binaryBits(scaled, terms.epsilon, source) });
  }
  return encodeValueReports({ clientId, items, factors,
    values: piecewiseValues(scaled, terms.epsilon, source) });
}
