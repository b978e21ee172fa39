/** Decode any message the SDK knows, dispatching on its kind byte (Python:
 * `Message.from_bytes` on the base class). */
import { Kind, peekKind } from "./header.js";
import {
  type GradientReports, type ShuffledReports, type ShuffledValues, type ValueReports,
  decodeGradientReports, decodeShuffledReports, decodeShuffledValues, decodeValueReports,
} from "./reports.js";
import { type ItemMatrix, decodeItemMatrix, decodeItemMatrix64 } from "./item_matrix.js";
import {
  type NeighbourLists, type ObfuscatedBits, decodeNeighbourLists, decodeObfuscatedBits,
} from "./dplcf.js";

/** A decoded message, tagged with its kind's name. */
export type AnyMessage =
  | { kind: "GradientReports"; message: GradientReports }
  | { kind: "ShuffledReports"; message: ShuffledReports }
  | { kind: "ItemMatrix"; message: ItemMatrix<Float32Array> }
  | { kind: "ValueReports"; message: ValueReports }
  | { kind: "ShuffledValues"; message: ShuffledValues }
  | { kind: "ObfuscatedBits"; message: ObfuscatedBits }
  | { kind: "NeighbourLists"; message: NeighbourLists }
  | { kind: "ItemMatrix64"; message: ItemMatrix<Float64Array> };

/** The message in `data`; {@link MessageError} on anything malformed. */
export function decodeMessage(data: Uint8Array): AnyMessage {
  const kind = peekKind(data) as Kind;
  switch (kind) {
    case Kind.GradientReports: return { kind: "GradientReports", message: decodeGradientReports(data) };
    case Kind.ShuffledReports: return { kind: "ShuffledReports", message: decodeShuffledReports(data) };
    case Kind.ItemMatrix: return { kind: "ItemMatrix", message: decodeItemMatrix(data) };
    case Kind.ValueReports: return { kind: "ValueReports", message: decodeValueReports(data) };
    case Kind.ShuffledValues: return { kind: "ShuffledValues", message: decodeShuffledValues(data) };
    case Kind.ObfuscatedBits: return { kind: "ObfuscatedBits", message: decodeObfuscatedBits(data) };
    case Kind.NeighbourLists: return { kind: "NeighbourLists", message: decodeNeighbourLists(data) };
    case Kind.ItemMatrix64: return { kind: "ItemMatrix64", message: decodeItemMatrix64(data) };
  }
}
