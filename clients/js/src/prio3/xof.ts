/**
 * XofTurboShake128 (draft-irtf-cfrg-vdaf-20 §6.2.1): TurboSHAKE128 (RFC 9861, from
 * @noble/hashes) with domain byte 1 over
 * `len(dst) (2 bytes LE) || dst || len(seed) (1 byte) || seed || binder`
 * (Python: dprec.protocol.secure_sum.vdaf.xof).
 *
 * Field vectors are drawn by rejection (`nextVec`): each 8-byte little-endian word is kept
 * when < p, the rejected ones replaced by the next words, in stream order.
 */
import { turboshake128 } from "@noble/hashes/sha3-addons.js";
import * as F from "./field64.js";

export const SEED_SIZE = 32;

type Stream = ReturnType<typeof turboshake128.create>;

export class XofTurboShake128 {
  private readonly h: Stream;

  constructor(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array) {
    if (seed.length > 255 || dst.length > 65535) {
      throw new RangeError("seed or domain separation tag too long");
    }
    this.h = turboshake128.create({ D: 1 });
    this.h.update(new Uint8Array([dst.length & 0xff, dst.length >>> 8]));
    this.h.update(dst);
    this.h.update(new Uint8Array([seed.length]));
    this.h.update(seed);
    this.h.update(binder);
  }

  /** The next `length` bytes of the stream. */
  next(length: number): Uint8Array {
    return this.h.xof(length);
  }

  /** The next `length` Field64 elements (rejection sampling). */
  nextVec(length: number): F.Vec {
    const out = F.zeros(length);
    let have = 0;
    while (have < length) {
      const block = F.decodeUnchecked(this.next((length - have) * F.ENCODED_SIZE));
      for (let i = 0; i < F.len(block) && have < length; i++) {
        if (F.belowModulus(block, i)) {
          out[2 * have] = block[2 * i]!;
          out[2 * have + 1] = block[2 * i + 1]!;
          have++;
        }
      }
    }
    return out;
  }

  /** A new seed: the first SEED_SIZE bytes of the stream. */
  static deriveSeed(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array): Uint8Array {
    return new XofTurboShake128(seed, dst, binder).next(SEED_SIZE);
  }

  /** `length` field elements from a fresh stream. */
  static expandIntoVec(seed: Uint8Array, dst: Uint8Array, binder: Uint8Array,
                       length: number): F.Vec {
    return new XofTurboShake128(seed, dst, binder).nextVec(length);
  }
}
