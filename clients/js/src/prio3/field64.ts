/**
 * Field64 of draft-irtf-cfrg-vdaf-20 §6.1: GF(p), p = 2^64 - 2^32 + 1, generator
 * 7^(2^32 - 1) of order 2^32, each element 8 bytes little-endian (Python:
 * dprec.protocol.secure_sum.vdaf.field.Field64).
 *
 * A vector of n elements is an `Int32Array` of 2n words, element i at words (2i, 2i + 1) =
 * (low, high) 32 bits (signed int32 storage of the unsigned words), so the arithmetic runs on
 * 32-bit integer operations only: measured against BigInt in bench/field64.mjs (limbs about
 * 2x faster per multiplication, and no allocation). Every vector holds canonical
 * representatives in [0, p). Scalars outside the hot paths are `bigint`. The prover's two hot
 * loops (the range gadget, the NTT's butterflies) run in WebAssembly where it can
 * (wasm64.ts: 64-bit multiplication, about 4x less CPU per report); this arithmetic is their
 * fallback and everything else's.
 */
import { MalformedUploadError } from "../errors.js";

export const P = 0xffffffff00000001n;
export const ENCODED_SIZE = 8;
export const GEN_ORDER = 1n << 32n;
export type Vec = Int32Array;
const TWO32 = 4294967296;
const INV32 = 1 / TWO32;

/** b^e mod p (bigint). */
export function powB(b: bigint, e: bigint): bigint {
  let r = 1n;
  b %= P;
  if (b < 0n) b += P;
  while (e > 0n) {
    if (e & 1n) r = (r * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return r;
}

/** 1/x mod p (x != 0). */
export function invB(x: bigint): bigint {
  return powB(x, P - 2n);
}

/** x mod p in [0, p) for any integer. */
export function modB(x: bigint | number): bigint {
  const r = BigInt(x) % P;
  return r < 0n ? r + P : r;
}

export const GENERATOR = powB(7n, 0xffffffffn);

/** A primitive n-th root of unity, n a power of two <= 2^32: g^(2^32 / n). */
export function root(n: number): bigint {
  if (n < 1 || (n & (n - 1)) !== 0 || n > 2 ** 32) {
    throw new RangeError(`no root of unity of order ${n} in Field64`);
  }
  return powB(GENERATOR, GEN_ORDER / BigInt(n));
}

export function zeros(n: number): Vec {
  return new Int32Array(2 * n);
}

export function len(v: Vec): number {
  return v.length >>> 1;
}

export function get(v: Vec, i: number): bigint {
  return (BigInt(v[2 * i + 1]! >>> 0) << 32n) | BigInt(v[2 * i]! >>> 0);
}

export function set(v: Vec, i: number, x: bigint): void {
  const r = modB(x);
  v[2 * i] = Number(r & 0xffffffffn) | 0;
  v[2 * i + 1] = Number(r >> 32n) | 0;
}

/** A vector of integers (any sign, |x| < 2^53 as numbers, or bigints) reduced mod p. */
export function fromInts(xs: ArrayLike<number | bigint>): Vec {
  const out = zeros(xs.length);
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    if (typeof x === "number" && x >= 0 && x <= 0xffffffff) {
      out[2 * i] = x | 0;
    } else {
      set(out, i, BigInt(x));
    }
  }
  return out;
}

export function toBigInts(v: Vec): bigint[] {
  const out: bigint[] = [];
  for (let i = 0; i < len(v); i++) out.push(get(v, i));
  return out;
}

/** The representative in (-p/2, p/2] as a bigint (for values known small). */
export function centred(x: bigint): bigint {
  return x > P / 2n ? x - P : x;
}

// -- scalar kernels on (low, high) words, writing out[o], out[o + 1] --------------------------

/** out[o..o+1] = (a + b) mod p. */
export function addTo(out: Vec, o: number, al: number, ah: number, bl: number, bh: number): void {
  let l = (al + bl) | 0;
  const c = (l >>> 0) < (al >>> 0) ? 1 : 0;
  let h = (ah + bh + c) | 0;
  const carry = (h >>> 0) < (ah >>> 0) || ((h >>> 0) === (ah >>> 0) && c === 1) ? 1 : 0;
  if (carry) { // 2^64 = 2^32 - 1 (mod p); no second carry (a + b < 2p)
    const n = (l - 1) | 0;
    h = (h + 1 - (l === 0 ? 1 : 0)) | 0;
    l = n;
  } else if (h === -1 && l !== 0) { // >= p: minus p
    l = (l - 1) | 0;
    h = 0;
  }
  out[o] = l;
  out[o + 1] = h;
}

/** out[o..o+1] = (a - b) mod p. */
export function subTo(out: Vec, o: number, al: number, ah: number, bl: number, bh: number): void {
  let l = (al - bl) | 0;
  const br = (al >>> 0) < (bl >>> 0) ? 1 : 0;
  let h = (ah - bh - br) | 0;
  const borrow = (ah >>> 0) < (bh >>> 0) || ((ah >>> 0) === (bh >>> 0) && br === 1);
  if (borrow) { // wrapped + p = wrapped - (2^32 - 1)
    const n = (l + 1) | 0;
    h = (h - 1 + (n === 0 ? 1 : 0)) | 0;
    l = n;
  }
  out[o] = l;
  out[o + 1] = h;
}

/** out[o..o+1] = a b mod p: four 32x32 products (16-bit halves, Math.imul), then the
 * Goldilocks reduction w0 + w1 2^32 + w2 (2^32 - 1) - w3 of the 128-bit product. */
export function mulTo(out: Vec, o: number, al: number, ah: number, bl: number, bh: number): void {
  let xl = al & 0xffff, xh = al >>> 16, yl = bl & 0xffff, yh = bl >>> 16;
  let ll = Math.imul(xl, yl), lh = Math.imul(xl, yh), hl = Math.imul(xh, yl), hh = Math.imul(xh, yh);
  let mid = (ll >>> 16) + (lh & 0xffff) + (hl & 0xffff);
  const p00l = (mid << 16) | (ll & 0xffff);
  const p00h = (hh + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) | 0;
  yl = bh & 0xffff; yh = bh >>> 16;
  ll = Math.imul(xl, yl); lh = Math.imul(xl, yh); hl = Math.imul(xh, yl); hh = Math.imul(xh, yh);
  mid = (ll >>> 16) + (lh & 0xffff) + (hl & 0xffff);
  const p01l = (mid << 16) | (ll & 0xffff);
  const p01h = (hh + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) | 0;
  xl = ah & 0xffff; xh = ah >>> 16;
  ll = Math.imul(xl, yl); lh = Math.imul(xl, yh); hl = Math.imul(xh, yl); hh = Math.imul(xh, yh);
  mid = (ll >>> 16) + (lh & 0xffff) + (hl & 0xffff);
  const p11l = (mid << 16) | (ll & 0xffff);
  const p11h = (hh + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) | 0;
  yl = bl & 0xffff; yh = bl >>> 16;
  ll = Math.imul(xl, yl); lh = Math.imul(xl, yh); hl = Math.imul(xh, yl); hh = Math.imul(xh, yh);
  mid = (ll >>> 16) + (lh & 0xffff) + (hl & 0xffff);
  const p10l = (mid << 16) | (ll & 0xffff);
  const p10h = (hh + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) | 0;
  let w1 = (p00h + p01l) | 0;
  let c1 = (w1 >>> 0) < (p00h >>> 0) ? 1 : 0;
  let t = (w1 + p10l) | 0;
  c1 += (t >>> 0) < (w1 >>> 0) ? 1 : 0;
  w1 = t;
  let w2 = (p01h + p10h) | 0;
  let c2 = (w2 >>> 0) < (p01h >>> 0) ? 1 : 0;
  t = (w2 + p11l) | 0;
  c2 += (t >>> 0) < (w2 >>> 0) ? 1 : 0;
  w2 = t;
  t = (w2 + c1) | 0;
  c2 += (t >>> 0) < (w2 >>> 0) ? 1 : 0;
  w2 = t;
  const w3 = (p11h + c2) | 0;
  const tl = w2 === 0 ? 0 : -w2 | 0; // w2 (2^32 - 1) = (w2 - 1) 2^32 + (2^32 - w2)
  const th = w2 === 0 ? 0 : (w2 - 1) | 0;
  let rl = (p00l + tl) | 0;
  const cc = (rl >>> 0) < (p00l >>> 0) ? 1 : 0;
  let rh = (w1 + th) | 0;
  let carry = (rh >>> 0) < (w1 >>> 0) ? 1 : 0;
  t = (rh + cc) | 0;
  carry |= (t >>> 0) < (rh >>> 0) ? 1 : 0;
  rh = t;
  if (carry) {
    const b = rl === 0 ? 1 : 0;
    rl = (rl - 1) | 0;
    rh = (rh + 1 - b) | 0;
  }
  if (w3 !== 0) {
    const b = (rl >>> 0) < (w3 >>> 0) ? 1 : 0;
    const under = rh === 0 && b === 1;
    rl = (rl - w3) | 0;
    rh = (rh - b) | 0;
    if (under) {
      rl = (rl + 1) | 0;
      rh = (rh - 1 + (rl === 0 ? 1 : 0)) | 0;
    }
  }
  if (rh === -1 && rl !== 0) {
    rl = (rl - 1) | 0;
    rh = 0;
  }
  out[o] = rl;
  out[o + 1] = rh;
}

/** out[o..o+1] = a c mod p for a small integer 0 <= c < 2^20: two exact double products
 * (< 2^52) and the reduction w0 + w1 2^32 + w2 (2^32 - 1), w2 < 2^20. */
export function mulSmallTo(out: Vec, o: number, al: number, ah: number, c: number): void {
  const lo = (al >>> 0) * c;
  const w0 = lo >>> 0;
  const mid = (ah >>> 0) * c + (lo - w0) * INV32;
  const w1 = mid >>> 0;
  const w2 = (mid - w1) * INV32;
  let l = w0 - w2, h = w1 + w2; // (w0 - w2) + (w1 + w2) 2^32
  if (l < 0) {
    l += TWO32;
    h -= 1;
  }
  if (h >= TWO32) { // 2^64 = 2^32 - 1 (mod p)
    h -= TWO32;
    l += TWO32 - 1;
    if (l >= TWO32) {
      l -= TWO32;
      h += 1;
    }
  }
  if (h === TWO32 - 1 && l >= 1) {
    l -= 1;
    h = 0;
  }
  out[o] = l | 0;
  out[o + 1] = h | 0;
}

// -- vectors ---------------------------------------------------------------------------------

/** a + b elementwise (equal lengths). */
export function add(a: Vec, b: Vec): Vec {
  const out = new Int32Array(a.length);
  for (let i = 0; i < a.length; i += 2) addTo(out, i, a[i]!, a[i + 1]!, b[i]!, b[i + 1]!);
  return out;
}

/** a - b elementwise (equal lengths). */
export function sub(a: Vec, b: Vec): Vec {
  const out = new Int32Array(a.length);
  for (let i = 0; i < a.length; i += 2) subTo(out, i, a[i]!, a[i + 1]!, b[i]!, b[i + 1]!);
  return out;
}

/** a b elementwise (equal lengths). */
export function mul(a: Vec, b: Vec): Vec {
  const out = new Int32Array(a.length);
  for (let i = 0; i < a.length; i += 2) mulTo(out, i, a[i]!, a[i + 1]!, b[i]!, b[i + 1]!);
  return out;
}

/** a c for a scalar c. */
export function scale(a: Vec, c: bigint): Vec {
  const s = fromInts([c]);
  const sl = s[0]!, sh = s[1]!;
  const out = new Int32Array(a.length);
  for (let i = 0; i < a.length; i += 2) mulTo(out, i, a[i]!, a[i + 1]!, sl, sh);
  return out;
}

/** The sum of the elements, as a 1-element vector. */
export function sum(a: Vec): Vec {
  const out = zeros(1);
  for (let i = 0; i < a.length; i += 2) addTo(out, 0, out[0]!, out[1]!, a[i]!, a[i + 1]!);
  return out;
}

/** sum_i a_i b_i, as a 1-element vector. */
export function dot(a: Vec, b: Vec): Vec {
  const out = zeros(1), t = zeros(1);
  for (let i = 0; i < a.length; i += 2) {
    mulTo(t, 0, a[i]!, a[i + 1]!, b[i]!, b[i + 1]!);
    addTo(out, 0, out[0]!, out[1]!, t[0]!, t[1]!);
  }
  return out;
}

/** [1, x, ..., x^(n-1)]. */
export function powers(x: bigint, n: number): Vec {
  const out = zeros(n);
  if (n === 0) return out;
  const s = fromInts([x]);
  out[0] = 1;
  for (let i = 1; i < n; i++) mulTo(out, 2 * i, out[2 * i - 2]!, out[2 * i - 1]!, s[0]!, s[1]!);
  return out;
}

export function concat(parts: Vec[]): Vec {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Int32Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Elements [start, stop) (a copy). */
export function slice(v: Vec, start: number, stop: number): Vec {
  return v.slice(2 * start, 2 * stop);
}

/** encode_vec: each element as 8 little-endian bytes. */
export function encode(v: Vec): Uint8Array {
  const out = new Uint8Array(4 * v.length);
  const view = new DataView(out.buffer);
  for (let i = 0; i < v.length; i++) view.setUint32(4 * i, v[i]! >>> 0, true);
  return out;
}

/** Little-endian 8-byte words, not reduced (for rejection sampling). */
export function decodeUnchecked(data: Uint8Array): Vec {
  if (data.length % ENCODED_SIZE !== 0) {
    throw new MalformedUploadError(`a vector of Field64 elements has a multiple of 8 bytes, got ${data.length}`);
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out = new Int32Array(data.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getUint32(4 * i, true) | 0;
  return out;
}

/** Whether element i of v (unreduced words) is < p. */
export function belowModulus(v: Vec, i: number): boolean {
  return !(v[2 * i + 1] === -1 && v[2 * i] !== 0);
}

/** decode_vec; MalformedUploadError on a bad length or an element >= p. */
export function decode(data: Uint8Array): Vec {
  const v = decodeUnchecked(data);
  for (let i = 0; i < len(v); i++) {
    if (!belowModulus(v, i)) {
      throw new MalformedUploadError("a Field64 element is >= p: not a field element");
    }
  }
  return v;
}
