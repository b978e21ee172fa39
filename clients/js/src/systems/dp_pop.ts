/**
 * dp-pop's device step on the secure sum with its Prio3 proof (Python:
 * systems.dp_pop.deploy.PopDeployment.client_step, draws.device_vector, own_items):
 *
 *     items  -> own_items: all of them, or (sampling = recency, more than k) the k with the
 *               largest times, ties by the smaller item id
 *     repeat (at most 64 times):
 *        z    <- Sk(mu_share)^d                          (the CSPRNG: noise first)
 *        v    <- k-hot of k items drawn uniformly (sampling = uniform, more than k) or all
 *     until |z_j| <= T, |sum z| <= S, ||v + z||^2 <= B2
 *     y = v + z -> Prio3 shares + proofs -> sealed to the proxy and the server -> SumUpload
 *
 * The round's numbers (mu_share = mu / min_honest, T, S, B2, k, the proofs) are dp-pop's
 * calibration of the checked config (Python: systems.dp_pop.calibration): {@link buildDpPopUpload}
 * takes them as a {@link DpPopRound}, refuses a proxy that publishes another check, and never
 * takes a number from the server.
 */
import { SecureSumError } from "../errors.js";
import { type DpPopTerms, dpPopCheck, type ContributionCheck } from "../prio3/contribution.js";
import { type ByteSource, type FixedRandomness, proveAndSeal } from "../secure_sum/proved.js";
import { MAX_DRAWS, meetsTruncation, type NoiseSource, skellamShare, tooManyDraws }
  from "../secure_sum/truncation.js";

export type DpPopSampling = "uniform" | "recency";

/** Everything public about one dp-pop round, as the device computed it from the config. */
export interface DpPopRound {
  readonly nItems: number;
  readonly sampling: DpPopSampling;
  /** The Poisson rate of each half of a client's share: mu / min_honest. */
  readonly muShare: number;
  /** The validity check's terms (k, T, S, B2, proofs). */
  readonly terms: DpPopTerms;
}

/** The device's CSPRNG (jsdev's SecureSource satisfies it). */
export interface DpPopSource extends NoiseSource, ByteSource {
  sample(n: number, k: number): number[];
}

/** The user's items (distinct ids in [0, nItems)) and, for recency, their times. */
export interface DpPopHistory {
  readonly items: ArrayLike<number>;
  readonly values?: ArrayLike<number>;
}

const checks = new Map<string, ContributionCheck>();

/** The round's check (cached per round: its circuit layout is reused by every report). */
export function dpPopRoundCheck(round: DpPopRound): ContributionCheck {
  const key = JSON.stringify([round.nItems, round.terms]);
  let check = checks.get(key);
  if (check === undefined) {
    check = dpPopCheck(round.nItems, round.terms);
    checks.set(key, check);
  }
  return check;
}

/** The device's items: all, or with recency and more than k, the k with the largest
 * values, ties by the smaller item id. */
export function ownItems(history: DpPopHistory, k: number, sampling: DpPopSampling): number[] {
  const items = Array.from(history.items);
  if (sampling !== "recency" || items.length <= k) return items;
  const values = history.values;
  if (values === undefined || values.length !== items.length) {
    throw new SecureSumError("sampling=recency needs the time of every item");
  }
  const order = items.map((_, i) => i);
  order.sort((a, b) => (values[b]! - values[a]!) || (items[a]! - items[b]!));
  return order.slice(0, k).map((i) => items[i]!);
}

function checkHistory(history: DpPopHistory, nItems: number): void {
  const seen = new Set<number>();
  for (const i of Array.from(history.items)) {
    if (!Number.isInteger(i) || i < 0 || i >= nItems || seen.has(i)) {
      throw new SecureSumError(`the history's items must be distinct integers in [0, ${nItems}), got ${i}`);
    }
    seen.add(i);
  }
}

/** The device's own plaintext of one report, before it is proved and split into shares:
 * `v` its quantised (k-hot) vector, `y = v + z` what it secret-shares (z its noise share). */
export interface DpPopPlaintext {
  readonly v: Int32Array;
  readonly y: Int32Array;
}

/** The caller's hook for the plaintext (the device's own data: it never leaves the device). */
export type OnPlaintext = (plaintext: DpPopPlaintext) => void;

/** v and y = v + z: the device's k-hot row and its noised row, the share truncated (module
 * doc). */
export function dpPopDraw(round: DpPopRound, history: DpPopHistory, rng: DpPopSource): DpPopPlaintext {
  const d = round.nItems, { k, T, S, B2 } = round.terms;
  checkHistory(history, d);
  const items = ownItems(history, k, round.sampling);
  for (let draw = 0; draw < MAX_DRAWS; draw++) {
    const z = skellamShare(d, round.muShare, rng);
    const chosen = round.sampling === "uniform" && items.length > k
      ? rng.sample(items.length, k).map((i) => items[i]!) : items;
    const v = new Int32Array(d);
    for (const i of chosen) v[i] = 1;
    if (meetsTruncation({ muShare: round.muShare, T, S, B2 }, z, v)) {
      for (let j = 0; j < d; j++) z[j] = z[j]! + v[j]!;
      return { v, y: z };
    }
  }
  throw tooManyDraws();
}

/** y = v + z: the device's noised k-hot row, its share truncated (module doc). */
export function dpPopVector(round: DpPopRound, history: DpPopHistory, rng: DpPopSource): Int32Array {
  return dpPopDraw(round, history, rng).y;
}

/** The published validity terms must be this device's (Python:
 * check_published_validity): else its upload would not verify, or the check is not the
 * config's. */
export function checkPublishedValidity(round: DpPopRound, published: unknown): void {
  const mine = { kind: "prio3", ...round.terms };
  const theirs = (published ?? {}) as Record<string, unknown>;
  const same = Object.keys(mine).length === Object.keys(theirs).length &&
    Object.entries(mine).every(([key, value]) => theirs[key] === value);
  if (!same) {
    throw new SecureSumError(`the proxy publishes the validity check ${JSON.stringify(published)}, ` +
      `this device computes ${JSON.stringify(mine)} from the config: refused (its upload would ` +
      "not verify, or the check is not the config's)");
  }
}

/** What a dp-pop report needs besides the round: the keys it seals to and the round id. */
export interface DpPopKeys {
  readonly proxyKey: Uint8Array;
  readonly serverKey: Uint8Array;
  /** What the proxy publishes as `validity` (checked against the round's terms). */
  readonly publishedValidity: unknown;
}

/** One dp-pop report: the SumUpload message (kind 40) of the user's history, proved and
 * sealed; every draw from `rng` (crypto.getRandomValues). `fixed`: test vectors only.
 * `onPlaintext`: the caller's optional hook, handed v and y once they are drawn, before the
 * proof (a copy: the report is built from the device's own). */
export function buildDpPopUpload(round: DpPopRound, history: DpPopHistory, keys: DpPopKeys,
                                 roundId: number, rng: DpPopSource,
                                 fixed?: FixedRandomness, onPlaintext?: OnPlaintext): Uint8Array {
  checkPublishedValidity(round, keys.publishedValidity);
  const check = dpPopRoundCheck(round);
  const { v, y } = dpPopDraw(round, history, rng);
  onPlaintext?.({ v: v.slice(), y: y.slice() });
  return proveAndSeal(check, keys.proxyKey, keys.serverKey, y, roundId, rng, fixed);
}
