/**
 * The device's own policy: which protocols, mechanisms, noise levels and sizes it accepts
 * (Python: dprec.client.policy.DevicePolicy). The user's, never read from a server, and
 * checked against the server's description before a byte is computed:
 *
 * - {@link DevicePolicy.read} turns the description into {@link ProtocolTerms} through the
 *   family's reader (terms.ts): a config field of the wrong type or range is a BadReply; a
 *   protocol larger than the policy (N, k, F, K, n_clients, min_honest, the message, the
 *   artefact) a PolicyViolation.
 * - {@link DevicePolicy.cost} is asked before a report: the mechanism must be one the policy
 *   accepts for the family (never `none`: that uploads the raw history), one randomised value
 *   (a DPLCF bit, one FMF-LDP report) costs at most `maxEpsilonPerReport`, the message at
 *   most `maxEpsilonPerRound`. It returns the message's epsilon, what the ledger charges:
 *   count x eps (basic composition, pure epsilon, replace-one). A bit flip's eps is
 *   max(ln(p/q), ln((1-q)/(1-p))) (presence only, ln(p/q), for the one-sided p = 1). A
 *   secure sum (dp-pop) is charged its run's epsilon once, within both limits, its delta
 *   within `maxDelta`, and `1 <= min_honest <= min(n_clients, maxMinHonest)`,
 *   `n_clients <= maxClients` (each client's share is Sk(mu / min_honest)).
 * - A report in the clear to a trusted aggregator is refused unless `trustAggregator`
 *   (and, with no noise at all, `acceptNoDp`); its Gaussian charge is not computed here (no
 *   TypeScript system sends one): such a protocol with noise is refused.
 */
import type { ProtocolDescription } from "./description.js";
import { BadReply, DprecError, PolicyViolation } from "./errors.js";
import type { DeviceReader, PolicyLimit, ProtocolTerms, TermsFields } from "./terms.js";

/** The mechanisms that add noise, per family (the only other value is `none`). */
export const NOISY: Readonly<Record<string, readonly string[]>> = Object.freeze({
  dplcf: Object.freeze(["symmetric", "asymmetric", "oue"]),
  fmf: Object.freeze(["binary", "piecewise"]),
  dp_pop: Object.freeze(["skellam"]),
});

/** Accepted by default: the two-sided ones (DPLCF's one-sided flip must be named). */
export const DEFAULT_MECHANISMS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  dplcf: Object.freeze(["symmetric", "oue"]),
  fmf: Object.freeze(["binary", "piecewise"]),
  dp_pop: Object.freeze(["skellam"]),
});

/** The bit flips' epsilon ranges (Python: dprec.mechanisms.bitflip). */
const MIN_FLIP_EPSILON = 1e-12;
const MAX_FLIP_EPSILON = 700;
const SYMMETRIC_MAX_EPSILON = 53 * Math.log(2);

/** The policy's fields, as in Python's policy file (snake_case there, camelCase here). */
export interface PolicyOptions {
  mechanisms?: Readonly<Record<string, readonly string[]>>;
  maxEpsilonPerReport?: number;
  maxEpsilonPerRound?: number;
  maxItems?: number;
  maxK?: number;
  maxFactors?: number;
  maxNeighbours?: number;
  maxMessageBytes?: number;
  maxArtefactBytes?: number;
  maxClients?: number;
  maxMinHonest?: number;
  maxDelta?: number;
  trustAggregator?: boolean;
  acceptNoDp?: boolean;
}

const DEFAULTS: Required<Omit<PolicyOptions, "mechanisms">> = {
  maxEpsilonPerReport: 5, maxEpsilonPerRound: Infinity, maxItems: 100_000, maxK: 1_000,
  maxFactors: 64, maxNeighbours: 1_000, maxMessageBytes: 1 << 20, maxArtefactBytes: 64 << 20,
  maxClients: 10_000_000, maxMinHonest: 100_000, maxDelta: 1e-5, trustAggregator: false,
  acceptNoDp: false,
};

/** The largest value of each integer field (Python's bounds). */
const INTEGER_HIGH: Readonly<Record<PolicyLimit | "maxMessageBytes" | "maxArtefactBytes", number>> = {
  maxItems: 1 << 24, maxK: 2 ** 32, maxFactors: 255, maxNeighbours: 1 << 24,
  maxMessageBytes: 2 ** 40, maxArtefactBytes: 2 ** 40, maxClients: 2 ** 40, maxMinHonest: 2 ** 40,
};

/** camelCase to Python's snake_case, for messages and policy files. */
export function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function show(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** What this device accepts; the defaults are safe. Never read from a server. */
export class DevicePolicy {
  readonly mechanisms: ReadonlyMap<string, ReadonlySet<string>>;
  readonly maxEpsilonPerReport: number;
  readonly maxEpsilonPerRound: number;
  readonly maxItems: number;
  readonly maxK: number;
  readonly maxFactors: number;
  readonly maxNeighbours: number;
  readonly maxMessageBytes: number;
  readonly maxArtefactBytes: number;
  readonly maxClients: number;
  readonly maxMinHonest: number;
  readonly maxDelta: number;
  readonly trustAggregator: boolean;
  readonly acceptNoDp: boolean;

  constructor(options: PolicyOptions = {}) {
    const o = { ...DEFAULTS, ...options };
    this.mechanisms = checkMechanisms(options.mechanisms ?? DEFAULT_MECHANISMS);
    for (const name of ["trustAggregator", "acceptNoDp"] as const) {
      if (typeof o[name] !== "boolean") {
        throw new DprecError(`${snake(name)} must be true or false, got ${show(o[name])}`);
      }
    }
    if (typeof o.maxDelta !== "number" || !(o.maxDelta > 0 && o.maxDelta < 1)) {
      throw new DprecError(`max_delta must be a number in (0, 1), got ${show(o.maxDelta)}`);
    }
    for (const name of ["maxEpsilonPerReport", "maxEpsilonPerRound"] as const) {
      if (typeof o[name] !== "number" || !(o[name] > 0)) {
        throw new DprecError(`${snake(name)} must be a number > 0, got ${show(o[name])}`);
      }
    }
    if (!Number.isFinite(o.maxEpsilonPerReport)) {
      throw new DprecError("max_epsilon_per_report must be finite (it is the least noise the " +
        "device adds)");
    }
    for (const [name, high] of Object.entries(INTEGER_HIGH)) {
      const value = o[name as keyof typeof INTEGER_HIGH];
      if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > high) {
        throw new DprecError(`${snake(name)} must be an integer in [1, ${high}], got ${show(value)}`);
      }
    }
    this.maxEpsilonPerReport = o.maxEpsilonPerReport;
    this.maxEpsilonPerRound = o.maxEpsilonPerRound;
    this.maxItems = o.maxItems;
    this.maxK = o.maxK;
    this.maxFactors = o.maxFactors;
    this.maxNeighbours = o.maxNeighbours;
    this.maxMessageBytes = o.maxMessageBytes;
    this.maxArtefactBytes = o.maxArtefactBytes;
    this.maxClients = o.maxClients;
    this.maxMinHonest = o.maxMinHonest;
    this.maxDelta = o.maxDelta;
    this.trustAggregator = o.trustAggregator;
    this.acceptNoDp = o.acceptNoDp;
    Object.freeze(this);
  }

  /** A policy from Python's policy file fields (snake_case; unknown fields refused;
   * `max_epsilon_per_round: null` is infinite). */
  static fromJson(doc: unknown): DevicePolicy {
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
      throw new DprecError("a device policy must be a JSON object");
    }
    const known = new Map(["mechanisms", ...Object.keys(DEFAULTS)].map((k) => [snake(k), k]));
    const options: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(doc)) {
      const name = known.get(key);
      if (name === undefined) {
        throw new DprecError(`unknown device policy field ${key}; known: ` +
          `${[...known.keys()].sort().join(", ")}`);
      }
      options[name] = name === "maxEpsilonPerRound" && value === null ? Infinity : value;
    }
    return new DevicePolicy(options as PolicyOptions);
  }

  /** The policy as Python's policy file (inf as null). */
  toJson(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const name of Object.keys(DEFAULTS)) out[snake(name)] = this[name as keyof typeof DEFAULTS];
    if (!Number.isFinite(this.maxEpsilonPerRound)) out["max_epsilon_per_round"] = null;
    out["mechanisms"] = Object.fromEntries([...this.mechanisms].map(([f, s]) => [f, [...s].sort()]));
    return out;
  }

  /** The typed terms of `info` read by `readTerms` (its family's reader); BadReply for a
   * malformed config, PolicyViolation beyond this policy's sizes. Computes nothing else. */
  read(info: ProtocolDescription,
       readTerms: (read: DeviceReader, info: ProtocolDescription) => TermsFields): ProtocolTerms {
    if (info.n_items > this.maxItems) {
      throw new PolicyViolation(`the protocol has n_items = ${info.n_items}, more than the ` +
        `device policy's max_items = ${this.maxItems}`);
    }
    let fields: TermsFields;
    try {
      fields = readTerms(new ConfigReader(this, info.config), info);
    } catch (e) {
      if (e instanceof BadReply || e instanceof PolicyViolation || !(e instanceof Error)) throw e;
      throw new BadReply(`the protocol's config is not a usable ${info.system} round: ${e.message}`);
    }
    const terms: ProtocolTerms = Object.freeze({
      ...fields, system: info.system, family: info.family, nItems: info.n_items,
      config: info.config,
    });
    if (terms.messageBytes > this.maxMessageBytes) {
      throw new PolicyViolation(`one report of ${info.system} sends ${terms.messageBytes} ` +
        `bytes, more than the device policy's max_message_bytes = ${this.maxMessageBytes}`);
    }
    if (terms.artefactBytes > this.maxArtefactBytes) {
      throw new PolicyViolation(`${info.system}'s ${terms.artefact} artefact ` +
        `(${terms.artefactWhat}) is ${terms.artefactBytes} bytes, more than the device ` +
        `policy's max_artefact_bytes = ${this.maxArtefactBytes}`);
    }
    return terms;
  }

  /** The epsilon one message of `terms` costs, if the policy accepts its mechanism and noise;
   * PolicyViolation otherwise (before anything is computed). */
  cost(terms: ProtocolTerms): number {
    if (terms.trustedAggregator) return this.trustedCost(terms);
    const accepted = this.mechanisms.get(terms.family) ?? new Set<string>();
    if (!accepted.has(terms.mechanism)) {
      const allowed = [...accepted].sort().join(", ") || "nothing";
      throw new PolicyViolation(`${terms.system} uses the ${terms.family} mechanism ` +
        `"${terms.mechanism}"; the device policy accepts ${allowed} for ${terms.family}` +
        (terms.mechanism === "none" ? " (none uploads the raw data)" : ""));
    }
    if (terms.secureSum) return this.secureSumCost(terms);
    const one = valueEpsilon(terms.family, terms.mechanism, terms.epsilon);
    if (!(one <= this.maxEpsilonPerReport)) {
      throw new PolicyViolation(`one randomised value of ${terms.system} costs epsilon ` +
        `${one.toPrecision(6)}, more than the device policy's max_epsilon_per_report = ` +
        `${this.maxEpsilonPerReport}`);
    }
    const total = terms.count * one;
    if (!(total > 0 && total <= this.maxEpsilonPerRound)) {
      throw new PolicyViolation(`one message of ${terms.system} (${terms.count} values) costs ` +
        `epsilon ${total.toPrecision(6)}, outside the device policy's (0, ` +
        `max_epsilon_per_round = ${this.maxEpsilonPerRound}]`);
    }
    return total;
  }

  private trustedCost(terms: ProtocolTerms): number {
    if (!this.trustAggregator) {
      throw new PolicyViolation(`${terms.system} sends its report in the clear, without local ` +
        "DP, to the server as a trusted aggregator; the device policy refuses this unless it " +
        "sets trust_aggregator = true (the guarantee then rests on that server)");
    }
    if (terms.noiseMultiplier === 0) {
      if (!this.acceptNoDp) {
        throw new PolicyViolation(`${terms.system} adds no noise anywhere: its report carries ` +
          "no DP guarantee (epsilon infinite); the device policy refuses it unless it also " +
          "sets accept_no_dp = true");
      }
      return 0;
    }
    throw new PolicyViolation(`${terms.system}'s trusted aggregator adds Gaussian noise; this ` +
      "SDK does not account it (use the Python SDK for this system)");
  }

  private secureSumCost(terms: ProtocolTerms): number {
    const eps = terms.epsilon;
    if (eps === null || !(eps > 0 && eps <= Math.min(this.maxEpsilonPerReport,
                                                       this.maxEpsilonPerRound))) {
      throw new PolicyViolation(`${terms.system} guarantees epsilon ${eps} per run, outside the ` +
        `device policy's (0, min(max_epsilon_per_report = ${this.maxEpsilonPerReport}, ` +
        `max_epsilon_per_round = ${this.maxEpsilonPerRound})]`);
    }
    if (!(terms.delta > 0 && terms.delta <= this.maxDelta)) {
      throw new PolicyViolation(`${terms.system} guarantees delta ${terms.delta}, outside the ` +
        `device policy's (0, max_delta = ${this.maxDelta}]`);
    }
    if (!(terms.minHonest >= 1 && terms.minHonest <= Math.min(terms.nClients, this.maxMinHonest))
        || terms.nClients > this.maxClients) {
      throw new PolicyViolation(`${terms.system} has min_honest = ${terms.minHonest} of ` +
        `n_clients = ${terms.nClients}; the device policy accepts min_honest in [1, ` +
        `min(n_clients, max_min_honest = ${this.maxMinHonest})] and n_clients <= ` +
        `max_clients = ${this.maxClients} (each share is Sk(mu / min_honest))`);
    }
    return eps;
  }
}

function checkMechanisms(
  mechanisms: Readonly<Record<string, readonly string[]>>,
): ReadonlyMap<string, ReadonlySet<string>> {
  if (typeof mechanisms !== "object" || mechanisms === null || Array.isArray(mechanisms)) {
    throw new DprecError("mechanisms must map a family to mechanism names");
  }
  const out = new Map<string, ReadonlySet<string>>();
  for (const [family, names] of Object.entries(mechanisms)) {
    const noisy = NOISY[family];
    if (noisy === undefined) {
      throw new DprecError(`mechanisms: unknown family "${family}"; known: ` +
        `${Object.keys(NOISY).join(", ")}`);
    }
    if (!Array.isArray(names) || !names.every((n) => typeof n === "string")) {
      throw new DprecError(`mechanisms.${family} must be a list of names, got ${show(names)}`);
    }
    const bad = names.filter((n) => !noisy.includes(n)).sort();
    if (bad.length > 0) {
      throw new DprecError(`mechanisms.${family}: ${bad.map((b) => `"${b}"`).join(", ")} ` +
        `refused; a device accepts only mechanisms that add noise: ${noisy.join(", ")} (none ` +
        "uploads the raw data)");
    }
    out.set(family, Object.freeze(new Set(names)));
  }
  return out;
}

/** The epsilon of one randomised value of `family`'s `mechanism` at the config's `epsilon`
 * (BadReply where the mechanism cannot be built: Python's own range checks). */
export function valueEpsilon(family: string, mechanism: string, epsilon: number | null): number {
  if (epsilon === null || !(epsilon > 0) || !Number.isFinite(epsilon)) {
    throw new BadReply(`the protocol's ${mechanism} mechanism: epsilon must be a finite number ` +
      `> 0, got ${epsilon}`);
  }
  if (family === "fmf") return epsilon; // binary and piecewise: pure eps-LDP per report
  if (family !== "dplcf") {
    throw new BadReply(`the protocol's family ${family} has no local mechanism ${mechanism}`);
  }
  const largest = mechanism === "symmetric" ? SYMMETRIC_MAX_EPSILON : MAX_FLIP_EPSILON;
  if (!(epsilon >= MIN_FLIP_EPSILON && epsilon < largest)) {
    throw new BadReply(`the protocol's ${mechanism} mechanism: epsilon must be in ` +
      `[${MIN_FLIP_EPSILON}, ${largest.toPrecision(6)}) for the bit flip, got ${epsilon}`);
  }
  const [p, q] = flipProbabilities(mechanism, epsilon);
  const presence = Math.log(p) - Math.log(q);
  if (p === 1) return presence; // one-sided: presence only
  return Math.max(presence, Math.log1p(-q) - Math.log1p(-p));
}

/** (p, q) of DPLCF's bit flip: a 1 stays 1 w.p. p, a 0 becomes 1 w.p. q (DPLCF Eq. 3). */
export function flipProbabilities(mechanism: string, epsilon: number): [number, number] {
  if (mechanism === "symmetric") {
    const p = 1 / (1 + Math.exp(-epsilon));
    return [p, 1 - p];
  }
  if (mechanism === "asymmetric") return [1, Math.exp(-epsilon)];
  if (mechanism === "oue") return [0.5, 1 / (Math.exp(epsilon) + 1)];
  throw new BadReply(`the protocol's bit flip must be symmetric, asymmetric or oue, got ` +
    `"${mechanism}"`);
}

/** A typed config read under a policy, field by field (module doc). */
class ConfigReader implements DeviceReader {
  constructor(private readonly policy: DevicePolicy,
              private readonly config: Readonly<Record<string, unknown>>) {}

  private field(name: string): unknown {
    return Object.prototype.hasOwnProperty.call(this.config, name) ? this.config[name] : undefined;
  }

  present(name: string): boolean {
    const value = this.field(name);
    return value !== undefined && value !== null;
  }

  real(name: string, options: { positive: boolean }): number {
    const value = this.field(name);
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0
        || (options.positive && value === 0)) {
      throw new BadReply(`the protocol's config.${name} must be a finite number ` +
        `${options.positive ? "> 0" : ">= 0"}, got ${show(value)}`);
    }
    return value;
  }

  integer(name: string, limit: PolicyLimit | null, high: number = 2 ** 31): number {
    const bound = limit === null ? high : Math.min(this.policy[limit], high);
    const value = this.field(name);
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1
        || (limit === null && value > bound)) {
      throw new BadReply(`the protocol's config.${name} must be an integer ` +
        `${limit === null ? `in [1, ${bound}]` : ">= 1"}, got ${show(value)}`);
    }
    if (value > bound) {
      throw new PolicyViolation(`the protocol's config.${name} = ${value} is more than the ` +
        `device policy's ${snake(limit as string)} = ${bound}`);
    }
    return value;
  }

  choice<T extends string>(name: string, allowed: readonly T[]): T {
    const value = this.field(name);
    if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
      throw new BadReply(`the protocol's config.${name} must be one of ${allowed.join(", ")}, ` +
        `got ${show(value)}`);
    }
    return value as T;
  }
}
