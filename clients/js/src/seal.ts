/**
 * A sealed box, bit-compatible with dprec.protocol.secure_sum.sealed (HPKE-style, RFC 9180
 * base mode):
 *
 *     seal(pk_R, m, aad):  e <- X25519 fresh key pair (crypto.getRandomValues via libsodium)
 *                          Z = X25519(e, pk_R)
 *                          key || nonce = HKDF-SHA256(Z, salt = none, info = LABEL || pk_E || pk_R)[:44]
 *                          box = pk_E || id(pk_R) || ChaCha20-Poly1305-IETF(key, nonce, m, aad)
 *
 * id(pk_R) = SHA-256(pk_R)[:8]. X25519 and ChaCha20-Poly1305 come from libsodium-wrappers,
 * HKDF and SHA-256 from @noble/hashes; nothing is hand-rolled. Call {@link ready} once
 * before sealing (libsodium's WebAssembly loads asynchronously); the DeviceClient does so
 * itself before a step builds its message.
 */
import sodium from "libsodium-wrappers";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import {
  MalformedUploadError, TamperedCiphertextError, WrongRecipientError,
} from "./errors.js";

export const LABEL = new TextEncoder().encode("dprec secure-sum sealed box v1");
export const KEY_BYTES = 32;
export const KEY_ID_BYTES = 8;
export const TAG_BYTES = 16;
/** Bytes a sealed box adds to its plaintext: ephemeral key, recipient id, AEAD tag. */
export const OVERHEAD = KEY_BYTES + KEY_ID_BYTES + TAG_BYTES;

let loaded = false;

/** Wait for libsodium to load; sealing and opening need it. Safe to call many times. */
export async function ready(): Promise<void> {
  await sodium.ready;
  loaded = true;
}

function lib(): typeof sodium {
  if (!loaded) {
    throw new MalformedUploadError("libsodium is not loaded: await ready() before sealing");
  }
  return sodium;
}

/** Concatenate byte strings. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

function checkKey(what: string, key: Uint8Array): void {
  if (!(key instanceof Uint8Array) || key.length !== KEY_BYTES) {
    const got = key instanceof Uint8Array ? `${key.length} bytes` : typeof key;
    throw new MalformedUploadError(`a ${what} key has ${KEY_BYTES} bytes, got ${got}`);
  }
}

/** The 8-byte recipient id of a raw X25519 public key: SHA-256(pk)[:8]. */
export function keyId(publicKey: Uint8Array): Uint8Array {
  return sha256(publicKey).slice(0, KEY_ID_BYTES);
}

/** An X25519 key pair (raw 32-byte keys). */
export interface KeyPair {
  readonly publicKey: Uint8Array;
  readonly privateKey: Uint8Array;
}

/** A fresh X25519 key pair from the CSPRNG. */
export function generateKeyPair(): KeyPair {
  const kp = lib().crypto_box_keypair();
  return { publicKey: kp.publicKey, privateKey: kp.privateKey };
}

/** The key pair of a raw 32-byte private key. */
export function keyPairFromPrivate(privateKey: Uint8Array): KeyPair {
  checkKey("private", privateKey);
  return { publicKey: lib().crypto_scalarmult_base(privateKey), privateKey: privateKey.slice() };
}

function x25519(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  try {
    return lib().crypto_scalarmult(privateKey, publicKey);
  } catch (e) {
    // libsodium refuses a low-order point (an all-zero shared secret), as Python does.
    throw new TamperedCiphertextError(`the box's ephemeral key is invalid: ${String(e)}`);
  }
}

function keyAndNonce(shared: Uint8Array, ephemeral: Uint8Array, recipient: Uint8Array):
    [Uint8Array, Uint8Array] {
  const okm = hkdf(sha256, shared, undefined, concatBytes(LABEL, ephemeral, recipient), 44);
  return [okm.slice(0, 32), okm.slice(32, 44)];
}

/**
 * `plaintext` sealed to `recipient` under the ephemeral private key `ephemeralPrivate`.
 * FOR TEST VECTORS ONLY: a reused ephemeral key reuses the AEAD key and nonce. The protocol
 * seals with {@link seal}, which draws a fresh one.
 */
export function sealWithEphemeral(ephemeralPrivate: Uint8Array, recipient: Uint8Array,
                                  plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  checkKey("public", recipient);
  checkKey("ephemeral private", ephemeralPrivate);
  const s = lib();
  const eph = s.crypto_scalarmult_base(ephemeralPrivate);
  const shared = x25519(ephemeralPrivate, recipient);
  const [key, nonce] = keyAndNonce(shared, eph, recipient);
  const ct = s.crypto_aead_chacha20poly1305_ietf_encrypt(plaintext, aad, null, nonce, key);
  return concatBytes(eph, keyId(recipient), ct);
}

/** `plaintext` sealed to the raw X25519 public key `recipient`, `aad` bound in (not sent). */
export function seal(recipient: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Uint8Array {
  checkKey("public", recipient);
  const ephemeral = generateKeyPair();
  return sealWithEphemeral(ephemeral.privateKey, recipient, plaintext, aad);
}

/**
 * The plaintext of `box`. Throws {@link WrongRecipientError} if it was sealed to another key,
 * {@link TamperedCiphertextError} if the tag fails (box or `aad` changed),
 * {@link MalformedUploadError} if it is shorter than {@link OVERHEAD}.
 */
export function openBox(keys: KeyPair, box: Uint8Array, aad: Uint8Array): Uint8Array {
  if (box.length < OVERHEAD) {
    throw new MalformedUploadError(`a sealed box has at least ${OVERHEAD} bytes, got ${box.length}`);
  }
  const eph = box.subarray(0, KEY_BYTES);
  const kid = box.subarray(KEY_BYTES, KEY_BYTES + KEY_ID_BYTES);
  const ct = box.subarray(KEY_BYTES + KEY_ID_BYTES);
  if (!equalBytes(kid, keyId(keys.publicKey))) {
    throw new WrongRecipientError(
      "the box was sealed to another public key: the client must seal to this role's current key");
  }
  const shared = x25519(keys.privateKey, eph);
  const [key, nonce] = keyAndNonce(shared, eph, keys.publicKey);
  try {
    return lib().crypto_aead_chacha20poly1305_ietf_decrypt(null, ct, aad, nonce, key);
  } catch {
    throw new TamperedCiphertextError(
      "the box's tag does not verify: it was changed in transit, or it belongs to another run, " +
      "round, message id or role; drop it");
  }
}

const RUN_LABEL = new TextEncoder().encode("dprec secure-sum run v1|");
const AAD_LABEL = new TextEncoder().encode("dprec secure-sum v2|");
export const RUN_ID_BYTES = 16;
export const MESSAGE_ID_BYTES = 16;
export const ROLES = ["proxy", "server"] as const;
export type Role = (typeof ROLES)[number];

/** The run's id: SHA-256("dprec secure-sum run v1|" || proxy key || server key)[:16]
 * (Python: secure_sum.messages.run_id). */
export function runId(proxyKey: Uint8Array, serverKey: Uint8Array): Uint8Array {
  checkKey("proxy public", proxyKey);
  checkKey("server public", serverKey);
  return sha256(concatBytes(RUN_LABEL, proxyKey, serverKey)).slice(0, RUN_ID_BYTES);
}

/** What a sealed box binds: label, run id, round id (u64 big-endian), message id, role
 * (Python: secure_sum.messages.associated_data). */
export function associatedData(run: Uint8Array, roundId: bigint | number, messageId: Uint8Array,
                               role: Role): Uint8Array {
  if (!(ROLES as readonly string[]).includes(role)) {
    throw new MalformedUploadError(`role must be one of proxy, server, got ${String(role)}`);
  }
  if (run.length !== RUN_ID_BYTES) {
    throw new MalformedUploadError(`a run id has ${RUN_ID_BYTES} bytes, got ${run.length}`);
  }
  const round = BigInt(roundId);
  if (round < 0n || round >= 1n << 64n) {
    throw new MalformedUploadError(`a round id is a u64, got ${round}`);
  }
  const be = new Uint8Array(8);
  new DataView(be.buffer).setBigUint64(0, round, false);
  return concatBytes(AAD_LABEL, run, be, messageId, new TextEncoder().encode(role));
}
