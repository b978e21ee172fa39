/**
 * dp-pop's broadcast and its sizes on the device (Python: systems.dp_pop.messages
 * .PopularityModel, deploy.PopDeployment.largest_model / device_upload_bytes):
 *
 *     PopularityModel (kind 42) = "DPRC" | version | 42 | contributors (u64 LE) | d (u32 LE)
 *                                 | the server's X25519 key (32) | d counts (i64 LE)
 *
 * before the round d = 0 (the key only: what a device seals its share to); after it, every
 * item's noisy count and how many clients they sum. Decoding trusts nothing: exact length,
 * magic, version, kind, d = 0 or the round's item count.
 */
import { MessageError } from "../errors.js";
import { dpPopRoundCheck, type DpPopRound } from "./dp_pop.js";
import { provedUploadBytes } from "../secure_sum/proved.js";
import { HEADER_BYTES, MAGIC, VERSION } from "../wire/header.js";

export const POPULARITY_MODEL_KIND = 42;
const FIXED = 8 + 4 + 32;

export interface PopularityModel {
  readonly serverKey: Uint8Array;
  /** Every item's noisy count (empty before the round). */
  readonly counts: Float64Array;
  readonly contributors: number;
}

/** The broadcast's fields; MessageError naming what is wrong. `nItems`: the round's items
 * (the counts must be none or exactly that many). */
export function decodePopularity(data: Uint8Array, nItems: number): PopularityModel {
  if (!(data instanceof Uint8Array) || data.length < HEADER_BYTES + FIXED) {
    throw new MessageError(`a PopularityModel has at least ${HEADER_BYTES + FIXED} bytes`);
  }
  if (!MAGIC.every((b, i) => data[i] === b) || data[4] !== VERSION || data[5] !== POPULARITY_MODEL_KIND) {
    throw new MessageError(`expected a PopularityModel (DPRC, version ${VERSION}, kind 42)`);
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const contributors = view.getBigUint64(HEADER_BYTES, true);
  const d = view.getUint32(HEADER_BYTES + 8, true);
  if (d !== 0 && d !== nItems) {
    throw new MessageError(`the model must hold no counts (before the round) or ${nItems}, got ${d}`);
  }
  const expected = HEADER_BYTES + FIXED + 8 * d;
  if (data.length !== expected) {
    throw new MessageError(`a PopularityModel of ${d} counts has ${expected} bytes, got ${data.length}`);
  }
  if (contributors > BigInt(Number.MAX_SAFE_INTEGER)) throw new MessageError("contributors out of range");
  const start = HEADER_BYTES + FIXED;
  const counts = new Float64Array(d);
  for (let j = 0; j < d; j++) {
    const c = view.getBigInt64(start + 8 * j, true);
    if (c > BigInt(Number.MAX_SAFE_INTEGER) || c < -BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new MessageError(`count ${j} is out of range`);
    }
    counts[j] = Number(c);
  }
  return { serverKey: data.slice(HEADER_BYTES + 12, HEADER_BYTES + FIXED), counts,
    contributors: Number(contributors) };
}

/** What a dp-pop round costs and sends, for the device's terms (jsdev's SecureSumShape):
 * one round, its proved upload's exact size, the largest broadcast, and the delta the
 * truncated shares cost at `epsilon`, (1 + e^eps) n (eta + eta_2), from `truncationTv`
 * = n (eta + eta_2) of the calibration. */
export function dpPopShape(round: DpPopRound, truncationTv: number, epsilon: number): {
  rounds: number; roundBytes: number[]; artefactBytes: number; deltaCost: number;
} {
  if (!(truncationTv >= 0 && truncationTv < 1)) {
    throw new MessageError(`the truncation's total variation must be in [0, 1), got ${truncationTv}`);
  }
  return {
    rounds: 1, roundBytes: [provedUploadBytes(dpPopRoundCheck(round))],
    artefactBytes: HEADER_BYTES + FIXED + 8 * round.nItems,
    deltaCost: (1 + Math.exp(epsilon)) * truncationTv,
  };
}
