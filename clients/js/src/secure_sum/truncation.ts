/**
 * An honest client's truncated noise share (Python: vdaf.noise_bounds): z ~ Sk(mu)^d,
 * Sk(mu) = Poisson(mu) - Poisson(mu) per coordinate (variance 2 mu), redrawn until
 * |z_j| <= T, |sum z| <= S and ||v + z||^2 <= B^2, so that v + z passes the validity proof.
 * The redrawn share is the original conditioned on an event of probability 1 - eta; the
 * accountant charges (1 + e^eps) n eta (the Python side's delta_cost).
 */
import { SecureSumError } from "../errors.js";

/** Draws from the device's CSPRNG (a SecureSource: crypto.getRandomValues only). */
export interface NoiseSource {
  poisson(lambda: number): number;
}

/** The bounds an honest share meets (the published check's T, S, B2). */
export interface Truncation {
  readonly muShare: number;
  readonly T: number;
  readonly S: number;
  readonly B2: number | null;
}

/** Draws before an honest client gives up (each breaks a bound w.p. at most eta). */
export const MAX_DRAWS = 64;
export const TOO_MANY_DRAWS = "noise draws all broke the truncation bounds, which an honest " +
  "draw does with probability eta per draw: check mu and T";

/** d draws of Sk(mu) = Poisson(mu) - Poisson(mu) (Python: SkellamMechanism(mu).noise). */
export function skellamShare(d: number, mu: number, rng: NoiseSource): Int32Array {
  const z = new Int32Array(d);
  for (let j = 0; j < d; j++) z[j] = rng.poisson(mu);
  for (let j = 0; j < d; j++) z[j] = z[j]! - rng.poisson(mu);
  return z;
}

/** Whether z meets the bounds for the vector v (Python: meets_truncation). */
export function meetsTruncation(tr: Truncation, z: ArrayLike<number>, v: ArrayLike<number>): boolean {
  let total = 0, norm = 0;
  for (let j = 0; j < z.length; j++) {
    const x = z[j]!;
    if (Math.abs(x) > tr.T) return false;
    total += x;
    const y = v[j]! + x;
    norm += y * y;
  }
  if (Math.abs(total) > tr.S) return false;
  return tr.B2 === null || norm <= tr.B2;
}

/** The refusal after {@link MAX_DRAWS} draws all broke the bounds. */
export function tooManyDraws(): SecureSumError {
  return new SecureSumError(`${MAX_DRAWS} ${TOO_MANY_DRAWS}`);
}
