/**
 * The server's protocol description (`GET /v1/protocol`) as the device holds it before its
 * policy reads it, and the run it names (Python: ProtocolInfo, dprec.client.runs.run_id).
 *
 * The document is decoded strictly first (wire/config.ts's decodeProtocolInfo: a family this
 * SDK runs, N in [1, MAX_ITEMS], every config field of its JSON type and range, no unknown
 * key; a refusal is a BadReply); the policy's reader (policy.ts) then reads the fields it
 * computes with, one by one, typed and bounded again under the device's own limits.
 *
 * A run is named by the SHA-256 (hex) of the description's canonical JSON (keys sorted at
 * every depth, no spaces) over the fields Python's ProtocolInfo.to_json holds (system,
 * family, n_items, rounds, aggregator, upload, forward, config; not the server's `role` or
 * `limits`, which describe its process, not the run): equal descriptions, equal runs. It is the device's own local key
 * (its ledger and stored messages), never sent; JavaScript writes 1.0 as 1, so it can differ
 * from the Python SDK's run id of the same description.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { BadReply, ConfigError } from "./errors.js";
import { decodeProtocolInfo } from "./wire/config.js";

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
  let info;
  try {
    info = decodeProtocolInfo(doc);
  } catch (e) {
    if (e instanceof ConfigError) throw new BadReply(`GET /v1/protocol: ${e.message}`);
    throw e;
  }
  const { system, family, nItems, aggregator, config } = info;
  if (system.length > 64) throw new BadReply(`the protocol's system name is ${system.length} characters`);
  return { system, family, n_items: nItems, aggregator,
           config: config as unknown as Record<string, unknown>, document: doc as Record<string, unknown> };
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
export function protocolRunId(info: ProtocolDescription): string {
  const run = Object.fromEntries(RUN_FIELDS.filter((k) => k in info.document)
    .map((k) => [k, info.document[k]]));
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(run))));
}

/** The description's fields that name its run (Python: ProtocolInfo.to_json). */
const RUN_FIELDS = ["system", "family", "n_items", "rounds", "aggregator", "upload", "forward",
                    "config"] as const;

/** The ledger key of the message sent in `round` of `run` (Python: report_key). */
export function reportKey(run: string, round: number): string {
  return `${run}/round-${round}`;
}
