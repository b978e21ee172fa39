/**
 * Validators of message content (Python: dprec.protocol.messages.integer_field, int_array,
 * real_array): each returns the value in its wire type or throws {@link MessageError}
 * naming the field, the rule and the value. An encoder runs them before writing a byte, a
 * decoder on what it read, so a decoded message is always a valid one.
 */
import { MessageError } from "../errors.js";

/** What a caller may pass for an integer array. */
export type IntArrayLike = ArrayLike<number>;
/** What a caller may pass for a real array. */
export type RealArrayLike = ArrayLike<number>;

/** `value` as an integer in [low, high]; refuses non-integers (1.5, "3", true) and range. */
export function integerField(name: string, value: unknown, low: number, high: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw new MessageError(`${name} must be an integer, got ${describe(value)}`);
  }
  if (value < low || value > high) {
    throw new MessageError(`${name} must be in [${low}, ${high}], got ${value}`);
  }
  return value;
}

/** `value` (a bigint, or a safe-integer number) as a bigint in [low, high]. */
export function bigintField(name: string, value: unknown, low: bigint, high: bigint): bigint {
  let v: bigint;
  if (typeof value === "bigint") v = value;
  else if (typeof value === "number" && Number.isSafeInteger(value)) v = BigInt(value);
  else throw new MessageError(`${name} must be an integer, got ${describe(value)}`);
  if (v < low || v > high) throw new MessageError(`${name} must be in [${low}, ${high}], got ${v}`);
  return v;
}

/** Integers in [low, high] copied into a new array of `ctor`'s type. */
export function intArray<T extends Int32Array | Uint8Array | Uint32Array>(
  name: string, values: unknown, low: number, high: number,
  ctor: { new (n: number): T }): T {
  const arr = arrayLike(name, values);
  const out = new ctor(arr.length);
  for (let i = 0; i < arr.length; i++) {
    const v = arr[i];
    if (typeof v !== "number" || !Number.isInteger(v)) {
      throw new MessageError(`${name} must hold integers, got ${describe(v)} at ${i}`);
    }
    if (v < low || v > high) {
      throw new MessageError(`${name} must be in [${low}, ${high}], got ${v} at ${i}`);
    }
    out[i] = v;
  }
  return out;
}

/** Finite reals, as float32 (`Float32Array`) or float64; refuses what overflows the width. */
export function realArray<T extends Float32Array | Float64Array>(
  name: string, values: unknown, ctor: { new (n: number): T }): T {
  const arr = arrayLike(name, values);
  const out = new ctor(arr.length);
  for (let i = 0; i < arr.length; i++) {
    const v = arr[i];
    if (typeof v !== "number") {
      throw new MessageError(`${name} must hold real numbers, got ${describe(v)} at ${i}`);
    }
    out[i] = v;
    if (!Number.isFinite(out[i]!)) {
      const width = ctor === (Float32Array as unknown) ? "float32" : "float64";
      throw new MessageError(`${name} must be finite (as ${width}), got ${v} at ${i}`);
    }
  }
  return out;
}

/** Refuse unless every value of a decoded array is finite. */
export function checkFinite(name: string, arr: Float32Array | Float64Array): void {
  for (let i = 0; i < arr.length; i++) {
    if (!Number.isFinite(arr[i]!)) {
      throw new MessageError(`${name} must be finite, got ${arr[i]} at ${i}`);
    }
  }
}

/** Refuse unless every value of a decoded integer array is in [low, high]. */
export function checkRange(name: string, arr: ArrayLike<number>, low: number, high: number): void {
  for (let i = 0; i < arr.length; i++) {
    const v = arr[i]!;
    if (v < low || v > high) {
      throw new MessageError(`${name} must be in [${low}, ${high}], got ${v} at ${i}`);
    }
  }
}

function arrayLike(name: string, values: unknown): ArrayLike<unknown> {
  if (Array.isArray(values) || ArrayBuffer.isView(values) && !(values instanceof DataView)) {
    const arr = values as ArrayLike<unknown>;
    if (typeof (arr as { [k: number]: unknown })[0] === "bigint") {
      throw new MessageError(`${name} must hold numbers, got bigints`);
    }
    return arr;
  }
  throw new MessageError(`${name} must be an array, got ${describe(values)}`);
}

/** A short description of a value for an error message. */
export function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.slice(0, 40));
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return `${typeof value} ${String(value)}`;
  }
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? (value.constructor?.name ?? "an object") : typeof value;
}

/** Bits (0/1 values) packed 8 per byte, first bit in the high bit, padding 0 (numpy.packbits). */
export function packBits(bits: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array((bits.length + 7) >>> 3);
  for (let i = 0; i < bits.length; i++) {
    if (bits[i]) out[i >>> 3]! |= 0x80 >>> (i & 7);
  }
  return out;
}

/** The first `count` bits of `packed`; refuses nonzero padding bits (numpy.unpackbits). */
export function unpackBits(name: string, packed: Uint8Array, count: number): Uint8Array {
  if (count % 8 && packed.length && packed[packed.length - 1]! & ((1 << (8 - (count % 8))) - 1)) {
    throw new MessageError(`${name}: padding bits after the ${count} bits must be 0`);
  }
  const out = new Uint8Array(count);
  for (let i = 0; i < count; i++) out[i] = (packed[i >>> 3]! >>> (7 - (i & 7))) & 1;
  return out;
}
