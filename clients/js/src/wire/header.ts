/**
 * The one framing of every protocol message (dprec.protocol.messages): a 6-byte header,
 * `"DPRC"`, format version (u8, {@link VERSION}), message kind (u8); the kind's fixed fields
 * and arrays follow, little-endian, and the message ends exactly where they end.
 *
 * Decoding trusts nothing: {@link readHeader} and {@link Reader} throw {@link MessageError} on
 * a short buffer, a wrong magic, version or kind, and {@link Reader.finish} on trailing bytes.
 */
import { MessageError } from "../errors.js";

export const MAGIC = new Uint8Array([0x44, 0x50, 0x52, 0x43]); // "DPRC"
/** Version 2: value reports use the 4-byte index; DPLCF messages carry the header. */
export const VERSION = 2;
export const HEADER_BYTES = 6;
/** Item indices fit the 24 high bits of a report's index; item counts are <= this. */
export const MAX_ITEMS = 1 << 24;
/** Latent factors of a broadcast factor matrix are <= this. */
export const MAX_FACTORS = 1 << 10;
export const U32_MAX = 0xffffffff;
export const I64_MIN = -(1n << 63n);
export const I64_MAX = (1n << 63n) - 1n;

/** The message kinds (the kind byte) that the TypeScript SDK reads or writes. */
export const Kind = {
  GradientReports: 1,
  ShuffledReports: 2,
  ItemMatrix: 3,
  ValueReports: 4,
  ShuffledValues: 5,
  ObfuscatedBits: 6,
  NeighbourLists: 7,
  ItemMatrix64: 10,
} as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

const KIND_NAMES = new Map<number, string>(Object.entries(Kind).map(([k, v]) => [v, k]));

/** The name of a kind byte ("kind 9" for one the SDK does not know). */
export function kindName(kind: number): string {
  return KIND_NAMES.get(kind) ?? `kind ${kind}`;
}

/** The kind byte of `data` after checking magic and version (no payload check). */
export function peekKind(data: Uint8Array): number {
  if (!(data instanceof Uint8Array)) {
    throw new MessageError(`message must be bytes (a Uint8Array), got ${typeof data}`);
  }
  if (data.length < HEADER_BYTES) {
    throw new MessageError(`message must be >= ${HEADER_BYTES} bytes, got ${data.length}`);
  }
  for (let i = 0; i < 4; i++) {
    if (data[i] !== MAGIC[i]) {
      const got = Array.from(data.subarray(0, 4), (b) => b.toString(16).padStart(2, "0")).join("");
      throw new MessageError(`message must start with "DPRC", got bytes ${got}`);
    }
  }
  if (data[4] !== VERSION) {
    throw new MessageError(`message version must be ${VERSION}, got ${data[4]}`);
  }
  const kind = data[5]!;
  if (!KIND_NAMES.has(kind)) throw new MessageError(`unknown message kind ${kind}`);
  return kind;
}

/** A {@link Reader} over the payload of `data`, which must be a message of `kind`. */
export function readHeader(data: Uint8Array, kind: Kind): Reader {
  const got = peekKind(data);
  if (got !== kind) {
    throw new MessageError(`expected a ${kindName(kind)} message, got ${kindName(got)}`);
  }
  return new Reader(data.subarray(HEADER_BYTES), kindName(kind));
}

/** Sequential little-endian reads over a payload; every read checks the bytes left. */
export class Reader {
  private readonly view: DataView;
  private offset = 0;

  constructor(private readonly bytes: Uint8Array, readonly name: string) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Bytes not read yet. */
  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  private take(n: number, what: string): number {
    if (n > this.remaining) {
      throw new MessageError(
        `${this.name} payload is truncated: ${what} needs ${n} bytes, ${this.remaining} left`);
    }
    const at = this.offset;
    this.offset += n;
    return at;
  }

  u8(what: string): number {
    return this.view.getUint8(this.take(1, what));
  }

  u32(what: string): number {
    return this.view.getUint32(this.take(4, what), true);
  }

  u64(what: string): bigint {
    return this.view.getBigUint64(this.take(8, what), true);
  }

  i64(what: string): bigint {
    return this.view.getBigInt64(this.take(8, what), true);
  }

  /** `n` little-endian uint32 values. */
  u32Array(n: number, what: string): Uint32Array {
    const at = this.take(4 * n, what);
    const out = new Uint32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getUint32(at + 4 * i, true);
    return out;
  }

  /** `n` little-endian int32 values. */
  i32Array(n: number, what: string): Int32Array {
    const at = this.take(4 * n, what);
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getInt32(at + 4 * i, true);
    return out;
  }

  /** `n` little-endian float32 values. */
  f32Array(n: number, what: string): Float32Array {
    const at = this.take(4 * n, what);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getFloat32(at + 4 * i, true);
    return out;
  }

  /** `n` little-endian float64 values. */
  f64Array(n: number, what: string): Float64Array {
    const at = this.take(8 * n, what);
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = this.view.getFloat64(at + 8 * i, true);
    return out;
  }

  /** A copy of the next `n` bytes. */
  bytesOf(n: number, what: string): Uint8Array {
    const at = this.take(n, what);
    return this.bytes.slice(at, at + n);
  }

  /** Refuse unless exactly `expected` bytes are left (before any allocation). */
  expectRemaining(expected: number, what: string): void {
    if (this.remaining !== expected) {
      throw new MessageError(
        `${this.name} payload must be ${expected} bytes for ${what}, got ${this.remaining}`);
    }
  }

  /** Refuse trailing bytes. */
  finish(): void {
    if (this.remaining !== 0) {
      throw new MessageError(`${this.name} has ${this.remaining} trailing bytes`);
    }
  }
}

/** Sequential little-endian writes into a buffer of a size known in advance. */
export class Writer {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  private offset = 0;

  /** A buffer of `payloadBytes` after the header of `kind`. */
  constructor(kind: Kind, payloadBytes: number) {
    this.bytes = new Uint8Array(HEADER_BYTES + payloadBytes);
    this.view = new DataView(this.bytes.buffer);
    this.bytes.set(MAGIC, 0);
    this.bytes[4] = VERSION;
    this.bytes[5] = kind;
    this.offset = HEADER_BYTES;
  }

  u8(v: number): void {
    this.view.setUint8(this.offset, v);
    this.offset += 1;
  }

  u32(v: number): void {
    this.view.setUint32(this.offset, v, true);
    this.offset += 4;
  }

  u64(v: bigint): void {
    this.view.setBigUint64(this.offset, v, true);
    this.offset += 8;
  }

  i64(v: bigint): void {
    this.view.setBigInt64(this.offset, v, true);
    this.offset += 8;
  }

  i32(v: number): void {
    this.view.setInt32(this.offset, v, true);
    this.offset += 4;
  }

  f32(v: number): void {
    this.view.setFloat32(this.offset, v, true);
    this.offset += 4;
  }

  f64(v: number): void {
    this.view.setFloat64(this.offset, v, true);
    this.offset += 8;
  }

  raw(b: Uint8Array): void {
    this.bytes.set(b, this.offset);
    this.offset += b.length;
  }

  /** The message; throws if the declared size was not filled exactly (an encoder bug). */
  done(): Uint8Array {
    if (this.offset !== this.bytes.length) {
      throw new MessageError(`encoder wrote ${this.offset} of ${this.bytes.length} bytes`);
    }
    return this.bytes;
  }
}
