/** A reproducible RandomSource for tests only (SHAKE-128 of a seed and a block counter):
 * the statistical tests then fail or pass the same way on every run. */
import { shake128 } from "@noble/hashes/sha3.js";
import { WordSource } from "../src/index.js";

export class SeededSource extends WordSource {
  private block = 0;
  private words = new Uint32Array(0);
  private next = 0;

  constructor(private readonly seed: string) {
    super();
  }

  private refill(): void {
    const out = shake128(new TextEncoder().encode(`${this.seed}/${this.block++}`), { dkLen: 4096 });
    this.words = new Uint32Array(out.buffer, out.byteOffset, 1024);
    this.next = 0;
  }

  protected word(): number {
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
