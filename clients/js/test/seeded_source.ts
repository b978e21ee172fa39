/** A reproducible RandomSource for tests only (SHAKE-128 of a seed and a block counter):
 * the statistical tests then fail or pass the same way on every run. */
import { shake128 } from "@noble/hashes/sha3.js";
import { DprecError, type RandomSource } from "../src/index.js";

const TWO_32 = 4294967296;
const TWO_53 = 9007199254740992;

/** A RandomSource from a stream of 32-bit words: uniform() of 53 bits, integers(n) by
 * rejection below a multiple of n (the draws the committed TS fixtures were written with). */
export class SeededSource implements RandomSource {
  private block = 0;
  private words = new Uint32Array(0);
  private next = 0;

  constructor(private readonly seed: string) {}

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

  private refill(): void {
    const out = shake128(new TextEncoder().encode(`${this.seed}/${this.block++}`), { dkLen: 4096 });
    this.words = new Uint32Array(out.buffer, out.byteOffset, 1024);
    this.next = 0;
  }

  private word(): number {
    if (this.next === this.words.length) this.refill();
    return this.words[this.next++]!;
  }

  bytes(n: number): Uint8Array {
    return Uint8Array.from({ length: n }, () => this.word() & 0xff);
  }
}

/** |observed - n p| within `z` binomial standard deviations. */
export function withinBinomial(observed: number, n: number, p: number, z = 5): boolean {
  return Math.abs(observed - n * p) <= z * Math.sqrt(n * p * (1 - p));
}
