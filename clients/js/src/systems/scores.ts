/**
 * On-device ranking from the broadcast and the TRUE history, which never leaves the device
 * (Python: the descriptors' `scores`, dplcf.client.local_scores and fmf.client.user_vectors).
 *
 * - DPLCF, item neighbourhood (Eq. 12): score(i) = sum_k sims[i, k] r(indices[i, k]);
 *   user neighbourhood: score(i) = the sum of the K largest sim(i, j) over the user's items
 *   j (sim(i, i) counts 0), from the full similarity matrix;
 * - FMF-LDP: score(i) = x_u . v_i with x_u of Eq. 4 (fmf_ldp.userVector).
 *
 * Sums are in float64 (Python's user neighbourhood sums in float32: the last digits may
 * differ).
 */
import { DprecError } from "../errors.js";
import type { NeighbourLists } from "../wire/dplcf.js";
import { type History, checkHistory } from "./history.js";
import { type ItemFactors, checkItemFactors, userVector } from "./fmf_ldp.js";

/** Every item's DPLCF score for the user (`k`: the protocol's neighbours, for "user"). */
export function dplcfScores(lists: NeighbourLists, history: History,
                            neighbourhood: "item" | "user", k: number): Float64Array {
  const n = lists.nItems;
  const h = checkHistory(history, n);
  const out = new Float64Array(n);
  if (lists.k === 0) return out; // a one-item catalogue has no neighbours
  if (neighbourhood === "item") {
    const r = new Float64Array(n);
    h.items.forEach((i, j) => { r[i] = h.values[j]!; });
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let m = 0; m < lists.k; m++) s += lists.sims[i * lists.k + m]! * r[lists.indices[i * lists.k + m]!]!;
      out[i] = s;
    }
    return out;
  }
  if (lists.full === null) throw new DprecError("the user-history neighbourhood needs the full similarity broadcast");
  const full = lists.full;
  const buf = new Float64Array(h.items.length);
  for (let i = 0; i < n; i++) {
    h.items.forEach((j, a) => { buf[a] = j === i ? 0 : full[i * n + j]!; });
    const top = h.items.length > k ? buf.slice().sort().subarray(h.items.length - k) : buf;
    out[i] = top.reduce((s, v) => s + v, 0);
  }
  return out;
}

/** Every item's FMF-LDP score for the user: x_u . v_i. */
export function fmfScores(V: ItemFactors, history: History, alpha: number, reg: number): Float64Array {
  const v = checkItemFactors(V, V.rows, V.cols);
  const f = V.cols;
  const x = userVector(v, f, checkHistory(history, V.rows), alpha, reg);
  return Float64Array.from({ length: V.rows }, (_, i) => {
    let s = 0;
    for (let a = 0; a < f; a++) s += x[a]! * v[i * f + a]!;
    return s;
  });
}
