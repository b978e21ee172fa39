/**
 * The randomness a device step draws: only from crypto.getRandomValues (never Math.random).
 *
 * {@link RandomSource} is the interface the steps take (the suggested shape of jsdev's
 * src/random.ts: any object with these three methods fits); {@link cryptoSource} is the one
 * a device uses. Tests may pass a seeded source to get reproducible draws.
 */
import { DprecError } from "../errors.js";

export interface RandomSource {
  /** A uniform double in [0, 1) with 53 random bits. */
  uniform(): number;
  /** A uniform integer in [0, n), 1 <= n <= 2^32, without modulo bias. */
  integers(n: number): number;
  /** `n` uniform random bytes. */
  bytes(n: number): Uint8Array;
}

const TWO_32 = 4294967296;
const TWO_53 = 9007199254740992;

/** uniform() and integers() from a source of random 32-bit words (shared by every source). */
export abstract class WordSource implements RandomSource {
  /** The next uniform 32-bit word. */
  protected abstract word(): number;
  abstract bytes(n: number): Uint8Array;

  uniform(): number {
    const hi = this.word() >>> 5; // 27 bits
    const lo = this.word() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / TWO_53;
  }

  integers(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > TWO_32) {
      throw new DprecError(`integers(n) needs an integer n in [1, 2^32], got ${n}`);
    }
    const limit = Math.floor(TWO_32 / n) * n; // accept words below a multiple of n
    for (;;) {
      const w = this.word();
      if (w < limit) return w % n;
    }
  }
}

/** A {@link RandomSource} on crypto.getRandomValues, buffered 4 KiB at a time. */
export class CryptoSource extends WordSource {
  private readonly buf = new Uint32Array(1024);
  private next = 1024;

  protected word(): number {
    if (this.next === this.buf.length) {
      globalThis.crypto.getRandomValues(this.buf);
      this.next = 0;
    }
    return this.buf[this.next++]!;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let off = 0; off < n; off += 65536) {
      globalThis.crypto.getRandomValues(out.subarray(off, Math.min(n, off + 65536)));
    }
    return out;
  }
}

/** The device's source: crypto.getRandomValues. */
export function cryptoSource(): RandomSource {
  if (typeof globalThis.crypto?.getRandomValues !== "function") {
    throw new DprecError("this runtime has no crypto.getRandomValues: a device cannot draw " +
      "its noise here");
  }
  return new CryptoSource();
}
