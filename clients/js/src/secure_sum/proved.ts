/**
 * A proved secure-sum upload (Python: dprec.protocol.secure_sum.proved.prove_and_seal and
 * deploy.proved_row): Prio3 shares of the noised integer vector y with their proofs, the
 * Helper's share sealed to the proxy and the Leader's to the server, both boxes binding the
 * public share:
 *
 *     upload = "DSU3" | round (u64 BE) | message id (16) | public share (64)
 *              | helper share sealed to the proxy | leader share sealed to the server
 *     aad(role) = associated_data(run, round, message id, role) || public share
 *
 * framed as a SumUpload message (kind 40: "DPRC", version, 40, then the upload). The message
 * id is Prio3's nonce; it and the client randomness come from the device's CSPRNG.
 */
import { MalformedUploadError, SecureSumError } from "../errors.js";
import type { ContributionCheck, Report } from "../prio3/contribution.js";
import {
  associatedData, concatBytes, KEY_BYTES, MESSAGE_ID_BYTES, OVERHEAD, type Role, runId, seal,
  sealWithEphemeral,
} from "../seal.js";
import { HEADER_BYTES, MAGIC, VERSION } from "../wire/header.js";

/** The message kind of a secure-sum upload (Python: secure_sum.wire.SumUpload). */
export const SUM_UPLOAD_KIND = 40;
const UPLOAD_LABEL = new TextEncoder().encode("DSU3");

/** Random bytes from the device's CSPRNG (a SecureSource). */
export interface ByteSource {
  bytes(n: number): Uint8Array;
}

/** The run id of two usable, distinct public keys; SecureSumError otherwise (a key is
 * hostile input: 32 bytes, not a low-order point, the proxy's and the server's differ). */
export function checkedRun(proxyKey: Uint8Array, serverKey: Uint8Array): Uint8Array {
  for (const [role, key] of [["proxy", proxyKey], ["server", serverKey]] as const) {
    if (!(key instanceof Uint8Array) || key.length !== KEY_BYTES) {
      throw new SecureSumError(`the ${role}'s public key must be ${KEY_BYTES} raw bytes: refuse to seal to it`);
    }
    try {
      seal(key, new Uint8Array(0), new Uint8Array(0));
    } catch (e) {
      if (e instanceof MalformedUploadError && /libsodium/.test(e.message)) throw e;
      throw new SecureSumError(`the ${role}'s public key is a low-order point (an all-zero ` +
        "shared secret): refuse to seal to it");
    }
  }
  if (proxyKey.every((b, i) => b === serverKey[i])) {
    throw new SecureSumError("the proxy and the server must hold different keys: with one key, " +
      "one party could open both shares");
  }
  return runId(proxyKey, serverKey);
}

/** The associated data of a proved box: the secure sum's, then the public share. */
export function boundData(run: Uint8Array, roundId: number, messageId: Uint8Array, role: Role,
                          publicShare: Uint8Array): Uint8Array {
  return concatBytes(associatedData(run, roundId, messageId, role), publicShare);
}

/** Test vectors only: fixed message id, client randomness and ephemeral keys. */
export interface FixedRandomness {
  readonly messageId: Uint8Array;
  readonly rand: Uint8Array;
  readonly proxyEphemeral: Uint8Array;
  readonly serverEphemeral: Uint8Array;
}

/** The SumUpload message of the noised vector y: proved, sealed, framed. `fixed` is for
 * test vectors only (a reused ephemeral key reuses the AEAD key). */
export function proveAndSeal(check: ContributionCheck, proxyKey: Uint8Array, serverKey: Uint8Array,
                             y: ArrayLike<number>, roundId: number, rng: ByteSource,
                             fixed?: FixedRandomness): Uint8Array {
  const run = checkedRun(proxyKey, serverKey);
  if (!Number.isSafeInteger(roundId) || roundId < 0) {
    throw new SecureSumError(`a round id is an integer >= 0, got ${roundId}`);
  }
  const mid = fixed?.messageId ?? rng.bytes(MESSAGE_ID_BYTES);
  const rep: Report = check.shard(y, mid, fixed?.rand ?? rng.bytes(check.randSize));
  const pub = rep.publicShare;
  const proxyAad = boundData(run, roundId, mid, "proxy", pub);
  const serverAad = boundData(run, roundId, mid, "server", pub);
  const helperBox = fixed ? sealWithEphemeral(fixed.proxyEphemeral, proxyKey, rep.helperShare, proxyAad)
    : seal(proxyKey, rep.helperShare, proxyAad);
  const leaderBox = fixed ? sealWithEphemeral(fixed.serverEphemeral, serverKey, rep.leaderShare, serverAad)
    : seal(serverKey, rep.leaderShare, serverAad);
  const head = new Uint8Array(HEADER_BYTES + 4 + 8);
  head.set(MAGIC, 0);
  head[4] = VERSION;
  head[5] = SUM_UPLOAD_KIND;
  head.set(UPLOAD_LABEL, HEADER_BYTES);
  new DataView(head.buffer).setBigUint64(HEADER_BYTES + 4, BigInt(roundId), false);
  return concatBytes(head, mid, pub, helperBox, leaderBox);
}

/** Bytes of a proved SumUpload message of `check` (header included). */
export function provedUploadBytes(check: ContributionCheck): number {
  const s = check.sizes();
  return HEADER_BYTES + 4 + 8 + MESSAGE_ID_BYTES + s.publicShare + s.helperShare + OVERHEAD +
    s.leaderShare + OVERHEAD;
}
