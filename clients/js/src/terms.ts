/**
 * What a published protocol is to the device: {@link ProtocolTerms}, the typed values it
 * computes with, read field by field from the server's config under the device's policy
 * (Python: ProtocolTerms and each descriptor's `terms`, dprec.systems.{dplcf,fmf}.deploy,
 * dprec.protocol.secure_sum.deploy).
 *
 * A family's reader ({@link dplcfTerms}, {@link fmfTerms}, {@link secureSumTerms}) gets a
 * {@link DeviceReader}: a malformed field is a BadReply, a size beyond the policy a
 * PolicyViolation. The sizes (the message one report sends, the artefact the device
 * downloads) are computed here from N and the config, never taken from the server.
 */
import type { ProtocolDescription } from "./description.js";
import { neighbourListsSize } from "./wire/dplcf.js";
import { HEADER_BYTES, Kind } from "./wire/header.js";
import { itemMatrixSize } from "./wire/item_matrix.js";
import { reportsSize } from "./wire/reports.js";

/** A size limit of the device policy a config field is bounded by. */
export type PolicyLimit = "maxItems" | "maxK" | "maxFactors" | "maxNeighbours" | "maxClients"
  | "maxMinHonest";

/** How the device reads a typed config field (its errors are the device's). */
export interface DeviceReader {
  /** The field, a finite number (> 0 with `positive`, else >= 0). */
  real(name: string, options: { positive: boolean }): number;
  /** The field, an integer >= 1 and at most the policy's `limit` (or `high` without one). */
  integer(name: string, limit: PolicyLimit | null, high?: number): number;
  /** The field, one of `allowed`. */
  choice<T extends string>(name: string, allowed: readonly T[]): T;
  /** Whether the config has the field and it is not null. */
  present(name: string): boolean;
}

/** A published protocol as the device reads it: typed, checked, within the policy. */
export interface ProtocolTerms {
  readonly system: string;
  readonly family: string;
  readonly nItems: number;
  readonly rounds: number;
  /** The mechanism's name (`symmetric`, `oue`, `binary`, `piecewise`, `skellam`, `none`). */
  readonly mechanism: string;
  /** The config's epsilon (null with no mechanism). */
  readonly epsilon: number | null;
  /** Randomised values in one message: N bits (DPLCF) or k reports (FMF-LDP); 1 for a sum. */
  readonly count: number;
  /** Bytes of the largest message one report sends. */
  readonly messageBytes: number;
  /** A secure sum's exact upload size per round (empty: every round `messageBytes`). */
  readonly roundBytes: readonly number[];
  readonly artefact: string;
  /** The artefact's size (exact, or at most with `artefactExact` false). */
  readonly artefactBytes: number;
  readonly artefactWhat: string;
  readonly artefactExact: boolean;
  /** A secure-sum system: one sealed upload per round, the run's epsilon charged once. */
  readonly secureSum: boolean;
  /** A secure sum's whole delta (its truncation's cost included). */
  readonly delta: number;
  readonly nClients: number;
  readonly minHonest: number;
  /** The report leaves in the clear to a server trusted as aggregator (PrivRec). */
  readonly trustedAggregator: boolean;
  readonly noiseMultiplier: number;
  /** The family's own values as read (k, factors, alpha, neighbours, cells, ...). */
  readonly values: Readonly<Record<string, number | string>>;
  /** The config as published (a secure sum's system computes its rounds from it). */
  readonly config: Readonly<Record<string, unknown>>;
}

/** What a family's reader gives (the policy adds system, family, N and the config). */
export type TermsFields = Omit<ProtocolTerms, "system" | "family" | "nItems" | "config">;

const BASE: Omit<TermsFields, "rounds" | "mechanism" | "epsilon" | "count" | "messageBytes"
  | "artefact" | "artefactBytes" | "artefactWhat" | "values"> = {
  roundBytes: [], artefactExact: true, secureSum: false, delta: 0, nClients: 0, minHonest: 0,
  trustedAggregator: false, noiseMultiplier: 0,
};


/** The exact upload size of round `round` of `terms`. */
export function uploadBytes(terms: ProtocolTerms, round: number): number {
  return terms.roundBytes.length > 0 ? (terms.roundBytes[round] ?? -1) : terms.messageBytes;
}

/** DPLCF (dplcf-sp, dplcf-oue, ...): one message of N flipped bits (ObfuscatedBits: header,
 * two counts, ceil(N / 8) bytes), one round, the neighbour lists as the artefact. */
export function dplcfTerms(read: DeviceReader, info: ProtocolDescription): TermsFields {
  const n = info.n_items;
  const flip = read.choice("flip", ["none", "symmetric", "asymmetric", "oue"]);
  const epsilon = flip === "none" ? null : read.real("epsilon", { positive: true });
  const k = read.integer("neighbours", "maxNeighbours");
  const hood = read.choice("neighbourhood", ["item", "user"]);
  const wireK = Math.min(k, n - 1);
  return {
    ...BASE, rounds: 1, mechanism: flip, epsilon, count: n,
    messageBytes: HEADER_BYTES + 8 + Math.ceil(n / 8), artefact: "neighbours",
    artefactBytes: neighbourListsSize(n, wireK, hood === "user"),
    artefactWhat: `${n} neighbour lists of ${wireK}` +
      (hood === "user" ? ` and the ${n} x ${n} similarity matrix` : ""),
    values: { neighbours: k, neighbourhood: hood },
  };
}

/** The largest F an item matrix on the wire carries. */
const MAX_WIRE_FACTORS = 255;

/** FMF-LDP: k reports per epoch (binary: GradientReports, 4 + 1/8 bytes each; piecewise:
 * ValueReports, 8 bytes each), the item matrix V as the artefact (float64 with
 * `cells = assigned`). */
export function fmfTerms(read: DeviceReader, info: ProtocolDescription): TermsFields {
  const n = info.n_items;
  const cells = read.choice("cells", ["chosen", "assigned"]);
  const mechanism = read.choice("mechanism", ["none", "binary", "piecewise"]);
  const epsilon = mechanism === "none" ? null : read.real("epsilon", { positive: true });
  const k = read.integer("k", "maxK");
  const f = read.integer("factors", "maxFactors", MAX_WIRE_FACTORS);
  const rounds = read.integer("epochs", null);
  return {
    ...BASE, rounds, mechanism, epsilon, count: k,
    messageBytes: reportsSize(mechanism === "binary" ? Kind.GradientReports : Kind.ValueReports, k),
    artefact: cells === "assigned" ? "item-matrix-f64" : "item-matrix",
    artefactBytes: itemMatrixSize(cells === "assigned" ? Kind.ItemMatrix64 : Kind.ItemMatrix, n, f),
    artefactWhat: `a ${n} x ${f} item matrix`,
    values: {
      cells, k, factors: f, alpha: read.real("alpha", { positive: false }),
      regularization: read.real("regularization", { positive: true }),
      clip: read.real("clip", { positive: true }),
    },
  };
}

/** A secure-sum system's sizes, computed by its device steps from the checked config
 * (jsprio's dp-pop: its calibration and its Prio3 check). */
export interface SecureSumShape {
  readonly rounds: number;
  /** Each round's exact upload, header included. */
  readonly roundBytes: readonly number[];
  /** The largest broadcast (the server's key, then the model). */
  readonly artefactBytes: number;
  /** The delta its truncated noise shares cost at `epsilon` (0 without validity proofs). */
  readonly deltaCost: number;
}

/** A secure sum (dp-pop): epsilon, delta, n_clients and min_honest within the policy, the
 * rounds' sizes from `shape` (Python: SecureSumDeployment.terms). */
export function secureSumTerms(read: DeviceReader, info: ProtocolDescription,
                               shape: (epsilon: number) => SecureSumShape,
                               label: string): TermsFields {
  const epsilon = read.real("epsilon", { positive: true });
  const delta = read.real("delta", { positive: true });
  const nClients = read.integer("n_clients", "maxClients");
  const minHonest = read.present("min_honest") ? read.integer("min_honest", "maxMinHonest")
    : nClients;
  const s = shape(epsilon);
  return {
    ...BASE, rounds: s.rounds, mechanism: "skellam", epsilon, count: 1, artefact: "model",
    artefactExact: false, secureSum: true, delta: delta + s.deltaCost, nClients, minHonest,
    artefactBytes: s.artefactBytes, roundBytes: s.roundBytes,
    messageBytes: Math.max(...s.roundBytes),
    artefactWhat: `${label}'s broadcast (its key, then the model)`, values: {},
  };
}
