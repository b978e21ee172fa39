/**
 * The published protocol description (Python: dprec.systems.deployable.ProtocolInfo.to_json)
 * and its typed config, decoded strictly as dprec.systems.config_json.config_from_json does:
 * a key the config class does not have, a field the object lacks, a value whose JSON type is
 * not the field's (a bool for a number, a string or 2.5 for an integer, a value outside a
 * Literal, null for a field that is not optional) is refused with a {@link ConfigError}
 * naming the field; then the class's own validation (and its family's: FMF-LDP's
 * exact=false, dp-pop's aggregation=secure with n_clients) runs. Values are kept as received.
 *
 * Departure: JSON.parse cannot tell `1.0` from `1`, so an integral number is accepted for an
 * integer field where Python refuses the float `1.0`.
 */
import { ConfigError } from "../errors.js";
import { MAX_ITEMS } from "./header.js";
import { describe } from "./fields.js";

type Scalar = "int" | "number" | "bool" | "string";
interface FieldSpec {
  readonly kind: Scalar;
  readonly literal?: readonly (string | number | boolean)[];
  readonly optional?: boolean;
}
type Spec = Readonly<Record<string, FieldSpec>>;

const INT: FieldSpec = { kind: "int" };
const NUM: FieldSpec = { kind: "number" };
const BOOL: FieldSpec = { kind: "bool" };
const STR: FieldSpec = { kind: "string" };
const lit = (...values: string[]): FieldSpec => ({ kind: "string", literal: values });

/** LocalItemCFConfig (dplcf-*), in declaration order. */
export interface DplcfConfig {
  readonly flip: "none" | "symmetric" | "asymmetric" | "oue";
  readonly estimator: "naive" | "unbiased" | "eb";
  readonly epsilon: number;
  readonly neighbours: number;
  readonly neighbourhood: "item" | "user";
  readonly batch_size: number;
  readonly aggregator: string;
  readonly history_cap: number | null;
}
const DPLCF: Spec = {
  flip: lit("none", "symmetric", "asymmetric", "oue"), estimator: lit("naive", "unbiased", "eb"),
  epsilon: NUM, neighbours: INT, neighbourhood: lit("item", "user"), batch_size: INT,
  aggregator: STR, history_cap: { kind: "int", optional: true },
};

/** FMFConfig (fmf-ldp), in declaration order. */
export interface FmfConfig {
  readonly factors: number;
  readonly regularization: number;
  readonly lr: number;
  readonly alpha: number;
  readonly epochs: number;
  readonly server_steps: number;
  readonly epsilon: number;
  readonly k: number;
  readonly clip: number;
  readonly mechanism: "binary" | "piecewise" | "none";
  readonly exact: boolean;
  readonly init_scale: number;
  readonly shuffle_threshold: number;
  readonly user_budget: number | null;
  readonly delta: number;
  readonly batch_size: number;
  readonly allow_no_update: boolean;
  readonly cells: "chosen" | "assigned";
  readonly aggregator: string;
}
const FMF: Spec = {
  factors: INT, regularization: NUM, lr: NUM, alpha: NUM, epochs: INT, server_steps: INT,
  epsilon: NUM, k: INT, clip: NUM, mechanism: lit("binary", "piecewise", "none"), exact: BOOL,
  init_scale: NUM, shuffle_threshold: INT, user_budget: { kind: "number", optional: true },
  delta: NUM, batch_size: INT, allow_no_update: BOOL, cells: lit("chosen", "assigned"),
  aggregator: STR,
};

/** DpPopConfig (dp-pop), in declaration order. */
export interface DpPopConfig {
  readonly epsilon: number;
  readonly delta: number;
  readonly k: number;
  readonly sampling: "uniform" | "recency";
  readonly aggregation: "secure" | "trusted";
  readonly min_honest: number | null;
  readonly n_clients: number | null;
  readonly validity: "prio3" | "none";
}
const DP_POP: Spec = {
  epsilon: NUM, delta: NUM, k: INT, sampling: lit("uniform", "recency"),
  aggregation: lit("secure", "trusted"), min_honest: { kind: "int", optional: true },
  n_clients: { kind: "int", optional: true }, validity: lit("prio3", "none"),
};

/** A decoded protocol description, its config typed by family. */
export type ProtocolInfo =
  | { readonly family: "dplcf"; readonly system: string; readonly nItems: number;
      readonly aggregator: string; readonly config: DplcfConfig }
  | { readonly family: "fmf"; readonly system: string; readonly nItems: number;
      readonly aggregator: string; readonly config: FmfConfig }
  | { readonly family: "dp_pop"; readonly system: string; readonly nItems: number;
      readonly aggregator: string; readonly config: DpPopConfig };

const DPLCF_AGGREGATORS = ["mean", "dplcf-range", "dplcf-screen", "dplcf-range+screen"];
const FMF_AGGREGATORS = ["mean", "trimmed", "median-of-means"];
/** The most reports the proxy holds per sender and round (Python: shuffler). */
export const MAX_REPORTS_PER_SENDER = 65536;
/** The largest report magnitude FMF-LDP accepts (Python: fmf.config.MAX_REPORT_SCALE). */
export const MAX_REPORT_SCALE = 1e100;

function kindOf(v: unknown): Scalar | null {
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "number";
  if (typeof v === "string") return "string";
  return null;
}

const KIND_WORDS: Record<Scalar, string> = {
  int: "an integer", number: "a number", bool: "true or false", string: "a string",
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The fields of `doc` typed by `spec` (config_from_json's checks, first failing field). */
function typed(name: string, spec: Spec, doc: unknown): Record<string, unknown> {
  if (!isObject(doc)) throw new ConfigError(`a ${name} must be a JSON object, got ${describe(doc)}`);
  const unknown = Object.keys(doc).filter((k) => !(k in spec)).sort();
  if (unknown.length) {
    throw new ConfigError(`config has keys ${name} does not have: ${unknown.join(", ")}`);
  }
  const missing = Object.keys(spec).filter((k) => !(k in doc));
  if (missing.length) throw new ConfigError(`config lacks ${name}'s fields: ${missing.join(", ")}`);
  const out: Record<string, unknown> = {};
  for (const [field, f] of Object.entries(spec)) {
    const value = doc[field];
    out[field] = value;
    if (value === null && f.optional) continue;
    const kind = kindOf(value);
    const ok = kind === f.kind || (kind === "int" && f.kind === "number");
    if (!ok || (f.literal !== undefined && !f.literal.includes(value as string))) {
      const want = f.literal !== undefined ? f.literal.map((a) => JSON.stringify(a)).join(" or ")
        : KIND_WORDS[f.kind];
      throw new ConfigError(`config.${field} must be ${want}${f.optional ? " or null" : ""}, ` +
        `got ${describe(value)}`);
    }
  }
  return out;
}

function refuse(field: string, rule: string, value: unknown): never {
  throw new ConfigError(`config.${field} must be ${rule}, got ${describe(value)}`);
}

function atLeast(c: Record<string, unknown>, fields: string[], low: number): void {
  for (const f of fields) if ((c[f] as number) < low) refuse(f, `an integer >= ${low}`, c[f]);
}

function positive(c: Record<string, unknown>, field: string): void {
  const v = c[field] as number;
  if (!(v > 0)) refuse(field, "> 0", v);
}

function aggregatorIn(c: Record<string, unknown>, known: string[]): void {
  const base = String(c.aggregator).split(":")[0]!;
  if (!known.includes(base)) refuse("aggregator", `one of ${known.join(", ")}`, c.aggregator);
}

/** LocalItemCFConfig's validation. */
export function decodeDplcfConfig(doc: unknown): DplcfConfig {
  const c = typed("LocalItemCFConfig", DPLCF, doc);
  if (c.flip !== "none") positive(c, "epsilon");
  atLeast(c, ["neighbours", "batch_size"], 1);
  if (c.history_cap !== null) atLeast(c, ["history_cap"], 1);
  aggregatorIn(c, DPLCF_AGGREGATORS);
  return c as unknown as DplcfConfig;
}

/** FMFConfig's validation, and FMF-LDP's as services (exact = false: FCF runs in process). */
export function decodeFmfConfig(doc: unknown): FmfConfig {
  const c = typed("FMFConfig", FMF, doc);
  atLeast(c, ["factors", "epochs", "server_steps", "k", "batch_size", "shuffle_threshold"], 1);
  const eps = c.epsilon as number;
  if (!(eps > 0) || eps > 50) refuse("epsilon", "in (0, 50] per report", eps);
  if (!c.exact && c.mechanism !== "none") {
    const scale = c.mechanism === "binary" ? 1 / Math.tanh(eps / 2) : 1 + 2 / Math.expm1(eps / 2);
    if (!(scale <= MAX_REPORT_SCALE)) refuse("epsilon", "large enough for a finite report scale", eps);
  }
  positive(c, "lr");
  if (c.user_budget !== null) positive(c, "user_budget");
  const delta = c.delta as number;
  if (!(delta > 0 && delta < 1)) refuse("delta", "in (0, 1)", delta);
  for (const f of ["regularization", "alpha", "init_scale"]) {
    if (!((c[f] as number) >= 0)) refuse(f, "a finite number >= 0", c[f]);
  }
  positive(c, "clip");
  aggregatorIn(c, FMF_AGGREGATORS);
  if ((c.k as number) > MAX_REPORTS_PER_SENDER) refuse("k", `<= ${MAX_REPORTS_PER_SENDER}`, c.k);
  if ((c.factors as number) > 255) refuse("factors", "<= 255", c.factors);
  if (c.exact) refuse("exact", "false (FCF sends whole gradients: it runs in process only)", c.exact);
  return c as unknown as FmfConfig;
}

/** DpPopConfig's validation, and dp-pop's as services (secure, with n_clients). */
export function decodeDpPopConfig(doc: unknown): DpPopConfig {
  const c = typed("DpPopConfig", DP_POP, doc);
  positive(c, "epsilon");
  const delta = c.delta as number;
  if (!(delta > 0 && delta < 1)) refuse("delta", "in (0, 1)", delta);
  atLeast(c, ["k"], 1);
  const m = c.min_honest as number | null;
  const n = c.n_clients as number | null;
  if (m !== null) atLeast(c, ["min_honest"], 1);
  if (m !== null && c.aggregation === "trusted") refuse("min_honest", "null with aggregation=trusted", m);
  if (n !== null) atLeast(c, ["n_clients"], 1);
  if (m !== null && n !== null && m > n) refuse("min_honest", `<= n_clients (${n})`, m);
  if (c.aggregation !== "secure") {
    refuse("aggregation", '"secure" as services (a trusted curator is not the untrusted server)',
      c.aggregation);
  }
  if (n === null) refuse("n_clients", "the clients enrolled, an integer", n);
  return c as unknown as DpPopConfig;
}

/** A published protocol description (`GET /v1/protocol`), decoded strictly. */
export function decodeProtocolInfo(doc: unknown): ProtocolInfo {
  if (!isObject(doc)) throw new ConfigError("a protocol description must be a JSON object");
  const { family, system, n_items: nItems, config } = doc;
  const aggregator = doc.aggregator ?? "mean";
  if (typeof system !== "string" || !system) refuse("system", "a name", system);
  if (typeof nItems !== "number" || !Number.isInteger(nItems) || nItems < 1 || nItems > MAX_ITEMS) {
    throw new ConfigError(`n_items must be an integer in [1, ${MAX_ITEMS}], got ${describe(nItems)}`);
  }
  if (typeof aggregator !== "string") {
    throw new ConfigError(`aggregator must be a string, got ${describe(aggregator)}`);
  }
  if (!isObject(config)) throw new ConfigError("a protocol description's config must be a JSON object");
  switch (family) {
    case "dplcf": return { family, system, nItems, aggregator, config: decodeDplcfConfig(config) };
    case "fmf": return { family, system, nItems, aggregator, config: decodeFmfConfig(config) };
    case "dp_pop": return { family, system, nItems, aggregator, config: decodeDpPopConfig(config) };
    default:
      throw new ConfigError(`family must be one of dplcf, fmf, dp_pop (the families this SDK ` +
        `runs), got ${describe(family)}`);
  }
}
