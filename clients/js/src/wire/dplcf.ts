/**
 * DPLCF's messages (Python: dprec.systems.dplcf.messages), on the one framing:
 *
 * | kind | message        | fixed fields                | arrays                               |
 * |------|----------------|-----------------------------|--------------------------------------|
 * | 6    | ObfuscatedBits | clients u32, n_items u32    | clients x ceil(n_items/8) bytes      |
 * | 7    | NeighbourLists | n u32, k u32, full u8 0/1   | n x k i32 indices, n x k f32 sims,   |
 * |      |                |                             | n x n f32 similarities if full = 1   |
 *
 * Bits are packed 8 per byte, first item in the high bit, padding bits 0.
 */
import { MessageError } from "../errors.js";
import { HEADER_BYTES, Kind, MAX_ITEMS, U32_MAX, Writer, readHeader } from "./header.js";
import { checkFinite, checkRange, integerField, intArray, realArray } from "./fields.js";

/** A batch of obfuscated interaction vectors: `clients` packed rows of `nItems` bits. */
export interface ObfuscatedBits {
  readonly clients: number;
  readonly nItems: number;
  /** clients x ceil(nItems / 8) bytes, row-major. */
  readonly packed: Uint8Array;
}

/** Each item's `k` neighbours and their similarities; `full` the n x n matrix or null. */
export interface NeighbourLists {
  readonly nItems: number;
  readonly k: number;
  readonly indices: Int32Array;
  readonly sims: Float32Array;
  readonly full: Float32Array | null;
}

function checkPadding(packed: Uint8Array, clients: number, nItems: number): void {
  const width = Math.ceil(nItems / 8);
  const mask = nItems % 8 ? (1 << (8 - (nItems % 8))) - 1 : 0;
  for (let c = 0; mask && c < clients; c++) {
    if (packed[c * width + width - 1]! & mask) {
      throw new MessageError(`padding bits after the ${nItems} item bits must be 0 (row ${c})`);
    }
  }
}

/** Encode; `packed` holds `clients` rows of ceil(nItems/8) bytes. */
export function encodeObfuscatedBits(m: { clients: number; nItems: number;
                                          packed: ArrayLike<number> }): Uint8Array {
  const nItems = integerField("n_items", m.nItems, 0, MAX_ITEMS);
  const clients = integerField("clients (packed rows)", m.clients, 0, U32_MAX);
  const packed = intArray("packed", m.packed, 0, 255, Uint8Array);
  const width = Math.ceil(nItems / 8);
  if (packed.length !== clients * width) {
    throw new MessageError(`packed must have ${clients} x ${width} bytes for n_items=${nItems}, ` +
      `got ${packed.length}`);
  }
  checkPadding(packed, clients, nItems);
  const w = new Writer(Kind.ObfuscatedBits, 8 + packed.length);
  w.u32(clients);
  w.u32(nItems);
  w.raw(packed);
  return w.done();
}

export function decodeObfuscatedBits(data: Uint8Array): ObfuscatedBits {
  const r = readHeader(data, Kind.ObfuscatedBits);
  const clients = r.u32("clients");
  const nItems = r.u32("n_items");
  if (nItems > MAX_ITEMS) throw new MessageError(`n_items must be in [0, ${MAX_ITEMS}], got ${nItems}`);
  const width = Math.ceil(nItems / 8);
  r.expectRemaining(clients * width, `${clients} x ${nItems} bits`);
  const packed = r.bytesOf(clients * width, "packed");
  checkPadding(packed, clients, nItems);
  r.finish();
  return { clients, nItems, packed };
}

/** Size of a NeighbourLists message. */
export function neighbourListsSize(nItems: number, k: number, full: boolean): number {
  return HEADER_BYTES + 9 + 8 * nItems * k + (full ? 4 * nItems * nItems : 0);
}

export function encodeNeighbourLists(m: { nItems: number; k: number; indices: ArrayLike<number>;
                                          sims: ArrayLike<number>;
                                          full?: ArrayLike<number> | null }): Uint8Array {
  const n = integerField("n_items (indices rows)", m.nItems, 0, MAX_ITEMS);
  const k = integerField("k (indices columns)", m.k, 0, U32_MAX);
  const indices = intArray("indices", m.indices, 0, n - 1, Int32Array);
  const sims = realArray("sims", m.sims, Float32Array);
  if (indices.length !== n * k || sims.length !== n * k) {
    throw new MessageError(`indices and sims must hold ${n} x ${k} values, got ` +
      `${indices.length} and ${sims.length}`);
  }
  const full = m.full == null ? null : realArray("full", m.full, Float32Array);
  if (full !== null && full.length !== n * n) {
    throw new MessageError(`full must hold ${n} x ${n} values, got ${full.length}`);
  }
  const w = new Writer(Kind.NeighbourLists, neighbourListsSize(n, k, full !== null) - HEADER_BYTES);
  w.u32(n);
  w.u32(k);
  w.u8(full === null ? 0 : 1);
  for (const v of indices) w.i32(v);
  for (const v of sims) w.f32(v);
  if (full !== null) for (const v of full) w.f32(v);
  return w.done();
}

export function decodeNeighbourLists(data: Uint8Array): NeighbourLists {
  const r = readHeader(data, Kind.NeighbourLists);
  const n = r.u32("n");
  const k = r.u32("k");
  const hasFull = r.u8("has_full");
  if (hasFull !== 0 && hasFull !== 1) throw new MessageError(`has_full must be 0 or 1, got ${hasFull}`);
  if (n > MAX_ITEMS) throw new MessageError(`n_items must be in [0, ${MAX_ITEMS}], got ${n}`);
  r.expectRemaining(8 * n * k + 4 * n * n * hasFull, `N=${n}, K=${k}, has_full=${hasFull}`);
  const indices = r.i32Array(n * k, "indices");
  checkRange("indices", indices, 0, n - 1);
  const sims = r.f32Array(n * k, "sims");
  checkFinite("sims", sims);
  let full: Float32Array | null = null;
  if (hasFull) {
    full = r.f32Array(n * n, "full");
    checkFinite("full", full);
  }
  r.finish();
  return { nItems: n, k, indices, sims, full };
}

/** Refuse unless the lists cover `nItems` and, with `needFull`, carry the full matrix. */
export function checkNeighbourListsFor(m: NeighbourLists, nItems: number, needFull = false):
    NeighbourLists {
  if (m.nItems !== nItems) {
    throw new MessageError(`neighbour lists must cover the client's ${nItems} items, got ${m.nItems}`);
  }
  if (needFull && m.full === null) {
    throw new MessageError("the user-history neighbourhood needs the full similarity matrix");
  }
  return m;
}
