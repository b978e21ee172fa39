/**
 * Top-k with an explicit tie rule (Python: dprec.selection.top_k_row): a larger score
 * first, among equal scores the smaller item id; NaN ranks as -Infinity. The result is a
 * function of the values only, never of a sort's tie order.
 */
import { DprecError } from "./errors.js";

/** The ids of the `k` largest of `scores`, best first (module doc's tie rule). */
export function topK(scores: ArrayLike<number>, k: number): number[] {
  if (!Number.isSafeInteger(k) || k < 0) throw new DprecError(`k must be an integer >= 0, got ${k}`);
  const value = (i: number) => {
    const s = scores[i] as number;
    return Number.isNaN(s) ? -Infinity : s;
  };
  const ids = Array.from({ length: scores.length }, (_, i) => i);
  ids.sort((a, b) => {
    const va = value(a);
    const vb = value(b);
    return va > vb ? -1 : va < vb ? 1 : a - b;
  });
  return ids.slice(0, Math.min(k, ids.length));
}
