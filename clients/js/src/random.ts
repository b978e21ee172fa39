/**
 * The device's randomness: every draw comes from `crypto.getRandomValues` (the platform's
 * CSPRNG, WebCrypto in a browser and in Node), never `Math.random`
 * (Python: dprec.client.randomness.SecureSource).
 *
 * - {@link SecureSource.int}: uniform on [0, n) by rejection (no modulo bias): take the
 *   top ceil(log2 n) bits of a uniform word and draw again while the value is >= n (fewer
 *   than two words expected);
 * - {@link SecureSource.float}: uniform on [0, 1) with 53 random bits (k / 2^53);
 * - {@link SecureSource.bernoulli}: true with probability p (float() < p: exact to 2^-53);
 * - {@link SecureSource.sample}: k distinct values of [0, n) in random order;
 * - {@link SecureSource.poisson}, {@link SecureSource.skellam}: a Skellam share
 *   Sk(mu) = Poisson(mu/2) - Poisson(mu/2) (dp-pop's noise share), Poisson by inversion for
 *   lambda < 10 and by Hormann's PTRS rejection (1993, as numpy) above.
 *
 * Bytes are drawn in pools of {@link POOL_BYTES} and every byte is used once. A SecureSource
 * is the device's one source: the {@link RandomSource} the dplcf-sp and fmf-ldp steps take
 * (`uniform`, `integers`, `bytes`) and dp-pop's DpPopSource (`poisson`, `sample`, `bytes`).
 */
import { DprecError } from "./errors.js";

/** What the dplcf-sp and fmf-ldp steps draw from: a device passes its {@link SecureSource};
 * a test may pass a seeded source of the same shape for reproducible draws. */
export interface RandomSource {
  /** A uniform double in [0, 1) with 53 random bits. */
  uniform(): number;
  /** A uniform integer in [0, n), without modulo bias. */
  integers(n: number): number;
  /** `n` uniform random bytes. */
  bytes(n: number): Uint8Array;
}

/** Fills a buffer with random bytes (the platform's CSPRNG; a test may pass its own). */
export type Fill = (buffer: Uint8Array) => void;

/** The most bytes one `getRandomValues` call may fill (WebCrypto's quota). */
const QUOTA = 65_536;
/** Bytes fetched from the CSPRNG at a time. */
export const POOL_BYTES = 4_096;
const TWO_32 = 4_294_967_296;
const TWO_53 = 9_007_199_254_740_992;

/** The platform's CSPRNG: `globalThis.crypto.getRandomValues`, in chunks of its quota. */
export function systemFill(buffer: Uint8Array): void {
  const crypto = globalThis.crypto;
  if (crypto === undefined || typeof crypto.getRandomValues !== "function") {
    throw new DprecError("this platform has no crypto.getRandomValues: the device cannot " +
      "draw secure randomness (use a browser with WebCrypto or Node >= 20)");
  }
  for (let start = 0; start < buffer.length; start += QUOTA) {
    crypto.getRandomValues(buffer.subarray(start, Math.min(start + QUOTA, buffer.length)));
  }
}

function checkCount(name: string, value: number, high: number = TWO_53): number {
  if (!Number.isSafeInteger(value) || value < 0 || value > high) {
    throw new DprecError(`${name} must be an integer in [0, ${high}], got ${value}`);
  }
  return value;
}

/** Cryptographically secure draws for one device (module doc). */
export class SecureSource implements RandomSource {
  readonly secure = true;
  private pool = new Uint8Array(0);
  private used = 0;

  /** `fill`: the platform's CSPRNG; only a test passes another (a known byte stream). */
  constructor(private readonly fill: Fill = systemFill) {}

  /** `n` fresh random bytes. */
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(checkCount("n", n, 1 << 30));
    let at = 0;
    while (at < n) {
      if (this.used === this.pool.length) this.refill();
      const take = Math.min(n - at, this.pool.length - this.used);
      out.set(this.pool.subarray(this.used, this.used + take), at);
      this.pool.fill(0, this.used, this.used + take);
      this.used += take;
      at += take;
    }
    return out;
  }

  private refill(): void {
    this.pool = new Uint8Array(POOL_BYTES);
    this.fill(this.pool);
    this.used = 0;
  }

  private byte(): number {
    if (this.used === this.pool.length) this.refill();
    const b = this.pool[this.used] as number;
    this.pool[this.used++] = 0;
    return b;
  }

  /** A uniform 32-bit unsigned integer (big-endian bytes). */
  uint32(): number {
    return ((this.byte() << 24) | (this.byte() << 16) | (this.byte() << 8) | this.byte()) >>> 0;
  }

  /** A uniform integer in [0, 2^53). */
  uint53(): number {
    const high = this.uint32() >>> 11; // 21 bits
    return high * TWO_32 + this.uint32();
  }

  /** Uniform on [0, n), 1 <= n <= 2^53, by rejection (never `x mod n`). */
  int(n: number): number {
    if ((!Number.isSafeInteger(n) && n !== TWO_53) || n < 1) {
      throw new DprecError(`int(n) needs an integer n in [1, 2^53], got ${n}`);
    }
    if (n === 1) return 0;
    const bits = Math.ceil(Math.log2(n));
    const width = 2 ** bits < n ? bits + 1 : bits; // guard log2's rounding
    for (;;) {
      const x = width <= 32
        ? Math.floor(this.uint32() / 2 ** (32 - width))
        : Math.floor(this.uint53() / 2 ** (53 - width));
      if (x < n) return x;
    }
  }

  /** Uniform on [0, 1): a uniform 53-bit integer over 2^53. */
  float(): number {
    return this.uint53() / TWO_53;
  }

  /** {@link float}, by the steps' name. */
  uniform(): number {
    return this.float();
  }

  /** {@link int}, by the steps' name. */
  integers(n: number): number {
    return this.int(n);
  }

  /** True with probability `p` (0 <= p <= 1; to within 2^-53). */
  bernoulli(p: number): boolean {
    if (!(p >= 0 && p <= 1)) throw new DprecError(`a probability must be in [0, 1], got ${p}`);
    return this.float() < p;
  }

  /** `k` distinct integers of [0, n), in uniformly random order (partial Fisher-Yates over a
   * sparse map: O(k) memory). */
  sample(n: number, k: number): number[] {
    checkCount("n", n);
    checkCount("k", k, n);
    const moved = new Map<number, number>();
    const out: number[] = [];
    for (let i = 0; i < k; i++) {
      const j = i + this.int(n - i);
      const vj = moved.get(j) ?? j;
      moved.set(j, moved.get(i) ?? i);
      out.push(vj);
    }
    return out;
  }

  /** Shuffle `values` in place, uniformly (Fisher-Yates); returns it. */
  shuffle<T>(values: T[]): T[] {
    for (let i = values.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [values[i], values[j]] = [values[j] as T, values[i] as T];
    }
    return values;
  }

  /** A Poisson(`lambda`) draw, 0 <= lambda <= 2^40. */
  poisson(lambda: number): number {
    if (!(lambda >= 0 && lambda <= 2 ** 40)) {
      throw new DprecError(`a Poisson mean must be in [0, 2^40], got ${lambda}`);
    }
    if (lambda === 0) return 0;
    return lambda < 10 ? this.poissonInversion(lambda) : this.poissonPtrs(lambda);
  }

  private poissonInversion(lambda: number): number {
    const limit = Math.exp(-lambda);
    let k = 0;
    let product = this.float();
    while (product > limit) {
      k += 1;
      product *= this.float();
    }
    return k;
  }

  /** Hormann's PTRS (transformed rejection with squeeze), lambda >= 10; numpy's constants. */
  private poissonPtrs(lambda: number): number {
    const slam = Math.sqrt(lambda);
    const loglam = Math.log(lambda);
    const b = 0.931 + 2.53 * slam;
    const a = -0.059 + 0.02483 * b;
    const invalpha = 1.1239 + 1.1328 / (b - 3.4);
    const vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
      const u = this.float() - 0.5;
      const v = this.float();
      const us = 0.5 - Math.abs(u);
      const k = Math.floor((2 * a / us + b) * u + lambda + 0.43);
      if (us >= 0.07 && v <= vr) return k;
      if (k < 0 || (us < 0.013 && v > us)) continue;
      if (Math.log(v) + Math.log(invalpha) - Math.log(a / (us * us) + b)
          <= -lambda + k * loglam - logGamma(k + 1)) return k;
    }
  }

  /** A Skellam(`mu`) draw: Poisson(mu/2) - Poisson(mu/2), variance mu. */
  skellam(mu: number): number {
    if (!(mu >= 0 && Number.isFinite(mu))) {
      throw new DprecError(`a Skellam variance must be a finite number >= 0, got ${mu}`);
    }
    return this.poisson(mu / 2) - this.poisson(mu / 2);
  }
}

const LOG_GAMMA_SERIES = [
  8.333333333333333e-02, -2.777777777777778e-03, 7.936507936507937e-04,
  -5.952380952380952e-04, 8.417508417508418e-04, -1.917526917526918e-03,
  6.410256410256410e-03, -2.955065359477124e-02, 1.796443723688307e-01,
  -1.39243221690590e+00,
];

/** ln Gamma(x), x > 0 (Stirling's series after shifting x above 7; numpy's `loggam`). */
export function logGamma(x: number): number {
  if (x === 1 || x === 2) return 0;
  let x0 = x;
  let n = 0;
  if (x <= 7) {
    n = Math.floor(7 - x);
    x0 = x + n;
  }
  const x2 = 1 / (x0 * x0);
  let series = LOG_GAMMA_SERIES[9] as number;
  for (let k = 8; k >= 0; k--) series = series * x2 + (LOG_GAMMA_SERIES[k] as number);
  let out = series / x0 + 0.5 * Math.log(2 * Math.PI) + (x0 - 0.5) * Math.log(x0) - x0;
  for (let k = 1; k <= n; k++) {
    out -= Math.log(x0 - 1);
    x0 -= 1;
  }
  return out;
}
