/**
 * The server's protocol description (`GET /v1/protocol`) as the device holds it before its
 * policy reads it, and the run it names (Python: ProtocolInfo, dprec.client.runs.run_id).
 *
 * The envelope is checked here (a JSON object with a system name, a family, N in
 * [1, MAX_ITEMS] and a config object); the config's fields are read one by one, typed and
 * bounded, by the policy's reader (policy.ts), never trusted as they come. jscore's strict
 * typed-config decoder (src/wire/) may run before; this module needs only the plain object.
 *
 * A run is named by the SHA-256 (hex) of the description's canonical JSON (keys sorted at
 * every depth, no spaces): equal descriptions, equal runs. It is the device's own local key
 * (its ledger and stored messages), never sent; JavaScript writes 1.0 as 1, so it can differ
 * from the Python SDK's run id of the same description.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { BadReply } from "./errors.js";

/** The largest catalogue a message can carry (Python: dprec.protocol.messages.MAX_ITEMS). */
export const MAX_ITEMS = 1 << 24;

/** A published protocol description, its envelope checked (module doc). */
export interface ProtocolDescription {
  readonly system: string;
  /** The descriptor's name (`dplcf`, `fmf`, `dp_pop`): which device steps serve it. */
  readonly family: string;
  readonly n_items: number;
  readonly aggregator: string;
  readonly config: Readonly<Record<string, unknown>>;
  /** The whole document as received (what the run id hashes). */
  readonly document: Readonly<Record<string, unknown>>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    && !(value instanceof Uint8Array);
}

/** The description `doc` (parsed JSON), its envelope checked; {@link BadReply} if malformed. */
export function parseDescription(doc: unknown): ProtocolDescription {
  if (!isObject(doc)) throw new BadReply("the protocol description must be a JSON object");
  const { system, family, n_items: n, config } = doc;
  const aggregator = doc["aggregator"] ?? "mean";
  if (typeof system !== "string" || system.length === 0 || system.length > 64) {
    throw new BadReply(`the protocol's system must be a name, got ${JSON.stringify(system)}`);
  }
  if (typeof family !== "string" || family.length === 0 || family.length > 64) {
    throw new BadReply(`the protocol's family must be a name, got ${JSON.stringify(family)}`);
  }
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_ITEMS) {
    throw new BadReply(`the protocol's n_items must be an integer in [1, ${MAX_ITEMS}], got ` +
      `${JSON.stringify(n)}`);
  }
  if (typeof aggregator !== "string") {
    throw new BadReply(`the protocol's aggregator must be a name, got ${JSON.stringify(aggregator)}`);
  }
  if (!isObject(config)) throw new BadReply("the protocol description's config must be a JSON object");
  return { system, family, n_items: n, aggregator, config, document: doc };
}

/** JSON with the keys of every object sorted and no spaces (equal values, equal strings). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  if (typeof value === "number" && !Number.isFinite(value)) {
    throw new BadReply(`a protocol description holds a non-finite number: ${value}`);
  }
  const text = JSON.stringify(value);
  if (text === undefined) throw new BadReply(`a protocol description holds ${typeof value}`);
  return text;
}

/** The run's identity: SHA-256 (hex) of the description's canonical JSON. */
export function runId(info: ProtocolDescription): string {
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(info.document))));
}

/** The ledger key of the message sent in `round` of `run` (Python: report_key). */
export function reportKey(run: string, round: number): string {
  return `${run}/round-${round}`;
}
