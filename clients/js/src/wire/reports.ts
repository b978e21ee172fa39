/**
 * The report messages (Python: dprec.protocol.messages, kinds 1, 2, 4, 5): (item, factor,
 * value) triples. A report's (item, factor) pair travels as one uint32 index,
 * `item << 8 | factor` (items below 2^24, factors below 256).
 *
 * | kind | message          | fixed fields         | arrays                                  |
 * |------|------------------|----------------------|-----------------------------------------|
 * | 1    | GradientReports  | client_id i64, k u32 | k u32 index, ceil(k/8) bytes of bits    |
 * | 2    | ShuffledReports  | m u64                | m u32 index, ceil(m/8) bytes of bits    |
 * | 4    | ValueReports     | client_id i64, k u32 | k u32 index, k f32 values (finite)      |
 * | 5    | ShuffledValues   | m u64                | m u32 index, m f32 values (finite)      |
 *
 * `bits[j] = 1` means +B, 0 means -B (FMF-LDP's one-bit report).
 */
import { MessageError } from "../errors.js";
import {
  HEADER_BYTES, I64_MAX, I64_MIN, Kind, MAX_ITEMS, Reader, U32_MAX, Writer, readHeader,
} from "./header.js";
import {
  bigintField, intArray, packBits, realArray, unpackBits, checkFinite,
} from "./fields.js";

/** One client's one-bit reports (FMF-LDP, kind 1). */
export interface GradientReports {
  readonly clientId: bigint;
  readonly items: Int32Array;
  readonly factors: Uint8Array;
  readonly bits: Uint8Array;
}

/** One client's real-valued reports (kind 4). */
export interface ValueReports {
  readonly clientId: bigint;
  readonly items: Int32Array;
  readonly factors: Uint8Array;
  readonly values: Float32Array;
}

/** A forwarded batch of one-bit reports, no sender (kind 2). */
export interface ShuffledReports {
  readonly items: Int32Array;
  readonly factors: Uint8Array;
  readonly bits: Uint8Array;
}

/** A forwarded batch of real-valued reports, no sender (kind 5). */
export interface ShuffledValues {
  readonly items: Int32Array;
  readonly factors: Uint8Array;
  readonly values: Float32Array;
}

/** What an encoder accepts: the fields, as typed arrays or plain arrays of numbers. */
export interface ReportsInput {
  clientId?: bigint | number;
  items: ArrayLike<number>;
  factors: ArrayLike<number>;
  bits?: ArrayLike<number>;
  values?: ArrayLike<number>;
}

type Codec = "bits" | "values";

function valueBytes(codec: Codec, k: number): number {
  return codec === "bits" ? Math.ceil(k / 8) : 4 * k;
}

/** Bytes of a message of `kind` holding `k` reports (without building it). */
export function reportsSize(kind: Kind, k: number): number {
  const [sender, codec] = shapeOf(kind);
  return HEADER_BYTES + (sender ? 12 : 8) + 4 * k + valueBytes(codec, k);
}

function shapeOf(kind: Kind): [boolean, Codec] {
  switch (kind) {
    case Kind.GradientReports: return [true, "bits"];
    case Kind.ShuffledReports: return [false, "bits"];
    case Kind.ValueReports: return [true, "values"];
    case Kind.ShuffledValues: return [false, "values"];
    default: throw new MessageError(`kind ${kind} is not a report message`);
  }
}

interface Checked {
  clientId: bigint;
  items: Int32Array;
  factors: Uint8Array;
  bits: Uint8Array;
  values: Float32Array;
}

function check(kind: Kind, m: ReportsInput): Checked {
  const [sender, codec] = shapeOf(kind);
  const clientId = sender ? bigintField("clientId", m.clientId, I64_MIN, I64_MAX) : 0n;
  const items = intArray("items", m.items, 0, MAX_ITEMS - 1, Int32Array);
  const factors = intArray("factors", m.factors, 0, 255, Uint8Array);
  const raw = codec === "bits" ? m.bits : m.values;
  const bits = codec === "bits" ? intArray("bits", raw, 0, 1, Uint8Array) : new Uint8Array(0);
  const values = codec === "values" ? realArray("values", raw, Float32Array) : new Float32Array(0);
  const n = codec === "bits" ? bits.length : values.length;
  if (items.length !== factors.length || items.length !== n) {
    throw new MessageError(`items, factors and ${codec} must have the same length, got ` +
      `${items.length}, ${factors.length}, ${n}`);
  }
  if (sender && items.length > U32_MAX) {
    throw new MessageError(`a client message holds <= ${U32_MAX} reports, got ${items.length}`);
  }
  return { clientId, items, factors, bits, values };
}

function encode(kind: Kind, m: ReportsInput): Uint8Array {
  const [sender, codec] = shapeOf(kind);
  const c = check(kind, m);
  const k = c.items.length;
  const w = new Writer(kind, reportsSize(kind, k) - HEADER_BYTES);
  if (sender) {
    w.i64(c.clientId);
    w.u32(k);
  } else {
    w.u64(BigInt(k));
  }
  for (let j = 0; j < k; j++) w.u32(((c.items[j]! << 8) | c.factors[j]!) >>> 0);
  if (codec === "bits") w.raw(packBits(c.bits));
  else for (let j = 0; j < k; j++) w.f32(c.values[j]!);
  return w.done();
}

function decode(kind: Kind, data: Uint8Array): Checked {
  const [sender, codec] = shapeOf(kind);
  const r: Reader = readHeader(data, kind);
  const clientId = sender ? r.i64("client_id") : 0n;
  const declared = sender ? BigInt(r.u32("k")) : r.u64("m");
  const perReport = codec === "bits" ? 4.125 : 8;
  if (declared > BigInt(Math.ceil(r.remaining / perReport))) {
    throw new MessageError(`${r.name} declares ${declared} reports, more than its ` +
      `${r.remaining} payload bytes hold`);
  }
  const k = Number(declared);
  r.expectRemaining(4 * k + valueBytes(codec, k), `${k} reports`);
  const index = r.u32Array(k, "indices");
  const items = new Int32Array(k);
  const factors = new Uint8Array(k);
  for (let j = 0; j < k; j++) {
    items[j] = index[j]! >>> 8;
    factors[j] = index[j]! & 0xff;
  }
  let bits: Uint8Array = new Uint8Array(0);
  let values: Float32Array = new Float32Array(0);
  if (codec === "bits") {
    bits = unpackBits(r.name, r.bytesOf(valueBytes(codec, k), "bits"), k);
  } else {
    values = r.f32Array(k, "values");
    checkFinite("values", values);
  }
  r.finish();
  return { clientId, items, factors, bits, values };
}

export function encodeGradientReports(m: ReportsInput): Uint8Array {
  return encode(Kind.GradientReports, m);
}

export function decodeGradientReports(data: Uint8Array): GradientReports {
  const c = decode(Kind.GradientReports, data);
  return { clientId: c.clientId, items: c.items, factors: c.factors, bits: c.bits };
}

export function encodeValueReports(m: ReportsInput): Uint8Array {
  return encode(Kind.ValueReports, m);
}

export function decodeValueReports(data: Uint8Array): ValueReports {
  const c = decode(Kind.ValueReports, data);
  return { clientId: c.clientId, items: c.items, factors: c.factors, values: c.values };
}

export function encodeShuffledReports(m: ReportsInput): Uint8Array {
  return encode(Kind.ShuffledReports, m);
}

export function decodeShuffledReports(data: Uint8Array): ShuffledReports {
  const c = decode(Kind.ShuffledReports, data);
  return { items: c.items, factors: c.factors, bits: c.bits };
}

export function encodeShuffledValues(m: ReportsInput): Uint8Array {
  return encode(Kind.ShuffledValues, m);
}

export function decodeShuffledValues(data: Uint8Array): ShuffledValues {
  const c = decode(Kind.ShuffledValues, data);
  return { items: c.items, factors: c.factors, values: c.values };
}
