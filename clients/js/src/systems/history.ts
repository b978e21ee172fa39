/** A user's history on the device: the items it holds and a value per item (a rating, or 1
 * for implicit feedback), checked before any step runs (it never leaves the device). */
import { DprecError } from "../errors.js";

export interface History {
  /** Distinct item indices in [0, nItems). */
  readonly items: ArrayLike<number>;
  /** One value > 0 per item (a rating); omitted: 1 each (implicit feedback). */
  readonly values?: ArrayLike<number>;
}

/** A checked history: sorted items and their values. */
export interface CheckedHistory {
  readonly items: Int32Array;
  readonly values: Float64Array;
}

/** The history sorted by item; a {@link DprecError} for an item outside [0, nItems), a
 * duplicate, or a value that is not a finite number > 0. */
export function checkHistory(history: History, nItems: number): CheckedHistory {
  const { items, values } = history;
  if (values !== undefined && values.length !== items.length) {
    throw new DprecError(`history needs one value per item, got ${values.length} for ${items.length}`);
  }
  const order = Array.from({ length: items.length }, (_, j) => j);
  for (const j of order) {
    const i = items[j];
    if (typeof i !== "number" || !Number.isInteger(i) || i < 0 || i >= nItems) {
      throw new DprecError(`history items must be integers in [0, ${nItems}), got ${i}`);
    }
    const v = values === undefined ? 1 : values[j];
    if (typeof v !== "number" || !Number.isFinite(v) || !(v > 0)) {
      throw new DprecError(`history values must be finite numbers > 0, got ${v} for item ${i}`);
    }
  }
  order.sort((a, b) => items[a]! - items[b]!);
  const out = { items: new Int32Array(items.length), values: new Float64Array(items.length) };
  order.forEach((j, at) => {
    out.items[at] = items[j]!;
    out.values[at] = values === undefined ? 1 : values[j]!;
    if (at && out.items[at] === out.items[at - 1]) {
      throw new DprecError(`history items must be distinct, item ${items[j]} appears twice`);
    }
  });
  return out;
}
