/**
 * DPLCF's device step (Python: dprec.systems.dplcf.deploy.DplcfDeployment.client_step,
 * client.obfuscate, mechanisms.bitflip.BitFlip): flip every bit of the user's N-bit
 * interaction vector independently,
 *
 *     P(report 1 | bit 1) = p,    P(report 1 | bit 0) = q,
 *
 * symmetric (DPLCF-SP): p = 1/(1 + e^-eps), q = 1 - p, two-sided eps-LDP per bit;
 * asymmetric (DPLCF-AP): p = 1, q = e^-eps, presence only; oue: p = 1/2, q = 1/(e^eps + 1).
 * Each bit is reported 1 iff a fresh uniform double u < p (or q), so P(1) equals p to within
 * 2^-53. The message is one ObfuscatedBits row (kind 6). As in Python's step, no history
 * cap is applied on the device; `none` (the raw vector) is refused here: a device never
 * uploads its history without noise.
 */
import { DprecError } from "../errors.js";
import { encodeObfuscatedBits } from "../wire/dplcf.js";
import { packBits } from "../wire/fields.js";
import { type History, checkHistory } from "./history.js";
import type { RandomSource } from "../random.js";

export type Flip = "symmetric" | "asymmetric" | "oue";

/** Below this, p and q are too close in float64 (Python: bitflip.MIN_EPSILON). */
export const MIN_EPSILON = 1e-12;
/** The asymmetric and OUE flips' limit: e^eps stays finite (Python: bitflip.MAX_EPSILON). */
export const MAX_EPSILON = 700;
/** The symmetric flip's limit 53 ln 2: above it p rounds to 1 (Python: SYMMETRIC_MAX_EPSILON). */
export const SYMMETRIC_MAX_EPSILON = 53 * Math.log(2);

/** A bit flip: P(1 | 1) = p, P(1 | 0) = q. */
export interface BitFlip {
  readonly flip: Flip;
  readonly epsilon: number;
  readonly p: number;
  readonly q: number;
}

/** The flip `flip` at `epsilon`, with Python's checks (a {@link DprecError} naming epsilon). */
export function bitFlip(flip: Flip, epsilon: number): BitFlip {
  const largest = flip === "symmetric" ? SYMMETRIC_MAX_EPSILON : MAX_EPSILON;
  if (typeof epsilon !== "number" || !(epsilon > 0) || !Number.isFinite(epsilon)) {
    throw new DprecError(`epsilon must be a finite number > 0, got ${epsilon}`);
  }
  if (epsilon < MIN_EPSILON) {
    throw new DprecError(`epsilon ${epsilon} is too small for a float64 flip probability; ` +
      `use epsilon >= ${MIN_EPSILON}`);
  }
  if (!(epsilon < largest)) {
    throw new DprecError(`epsilon must be < ${largest.toPrecision(6)} for the ${flip} flip, ` +
      `got ${epsilon}`);
  }
  switch (flip) {
    case "symmetric": {
      const p = 1 / (1 + Math.exp(-epsilon));
      return { flip, epsilon, p, q: 1 - p };
    }
    case "asymmetric": return { flip, epsilon, p: 1, q: Math.exp(-epsilon) };
    case "oue": return { flip, epsilon, p: 0.5, q: 1 / (Math.exp(epsilon) + 1) };
    default:
      throw new DprecError(`flip must be symmetric, asymmetric or oue on a device, got ` +
        `${String(flip)} (none uploads the raw history)`);
  }
}

/** The user's `nItems` bits flipped by `mechanism`: one 0/1 byte per item. */
export function obfuscate(held: ArrayLike<number>, nItems: number, mechanism: BitFlip,
                          source: RandomSource): Uint8Array {
  const truth = new Uint8Array(nItems);
  for (let j = 0; j < held.length; j++) truth[held[j]!] = 1;
  const out = new Uint8Array(nItems);
  for (let i = 0; i < nItems; i++) {
    out[i] = source.uniform() < (truth[i] ? mechanism.p : mechanism.q) ? 1 : 0;
  }
  return out;
}

/** What the step needs of the protocol terms (read under the device policy). */
export interface DplcfStepTerms {
  readonly nItems: number;
  readonly mechanism: Flip;
  readonly epsilon: number;
}

/** The device's message for its one round: ObfuscatedBits of 1 x nItems flipped bits. */
export function dplcfStep(terms: DplcfStepTerms, history: History, source: RandomSource): Uint8Array {
  const mechanism = bitFlip(terms.mechanism, terms.epsilon);
  const held = checkHistory(history, terms.nItems).items;
  const bits = obfuscate(held, terms.nItems, mechanism, source);
  return encodeObfuscatedBits({ clients: 1, nItems: terms.nItems, packed: packBits(bits) });
}
