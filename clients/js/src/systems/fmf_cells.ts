/**
 * FMF-LDP's assigned cells (Python: dprec.systems.fmf.cells), bit for bit: the proxy
 * recomputes them and refuses a message whose cells differ.
 *
 * - seed = SHA-256(DOMAIN || shape as two int64 LE || V as float64 LE, row-major)
 *   ({@link roundSeed}, the hash of the broadcast V, which must be the server's float64 V:
 *   the ItemMatrix64 artefact);
 * - SHAKE-256(seed || token) read as little-endian uint64 words w; words w >= L =
 *   floor(2^64 / (N F)) N F are rejected, the first k accepted give the cells c = w mod N F,
 *   item c div F, factor c mod F ({@link assignedCells}).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { shake256 } from "@noble/hashes/sha3.js";
import { DprecError } from "../errors.js";

export const DOMAIN = new TextEncoder().encode("dprec/fmf-ldp/assigned-cells/v1");
/** Bytes of a client's cells token (one HMAC-SHA256, issued by the proxy). */
export const CELLS_TOKEN_BYTES = 32;

/** The round's public seed from the broadcast V (rows x cols float64, row-major). */
export function roundSeed(matrix: Float64Array, rows: number, cols: number): Uint8Array {
  if (matrix.length !== rows * cols) {
    throw new DprecError(`V must hold ${rows} x ${cols} values, got ${matrix.length}`);
  }
  const body = new Uint8Array(16 + 8 * matrix.length);
  const view = new DataView(body.buffer);
  view.setBigInt64(0, BigInt(rows), true);
  view.setBigInt64(8, BigInt(cols), true);
  for (let j = 0; j < matrix.length; j++) view.setFloat64(16 + 8 * j, matrix[j]!, true);
  const h = sha256.create();
  h.update(DOMAIN);
  h.update(body);
  return h.digest();
}

/** A token as the proxy sends it (`{"cells_token": hex}`): exactly 32 bytes, else an error. */
export function parseCellsToken(text: unknown): Uint8Array {
  if (typeof text !== "string" || !/^[0-9a-fA-F]{64}$/.test(text)) {
    throw new DprecError(`a cells token must be ${2 * CELLS_TOKEN_BYTES} hex digits, got ` +
      `${JSON.stringify(String(text).slice(0, 80))}`);
  }
  return Uint8Array.from(text.match(/../g)!, (h) => parseInt(h, 16));
}

/** The k cells of `token` this round: items and factors. */
export function assignedCells(seed: Uint8Array, token: Uint8Array, k: number, nItems: number,
                              nFactors: number): { items: Int32Array; factors: Uint8Array } {
  const total = nItems * nFactors;
  if (!(k >= 1) || !(total >= 1)) {
    throw new DprecError(`need k >= 1 and a non-empty item x factor grid, got k=${k}, ` +
      `${nItems} x ${nFactors}`);
  }
  if (token.length !== CELLS_TOKEN_BYTES) {
    throw new DprecError(`a cells token has ${CELLS_TOKEN_BYTES} bytes, got ${token.length}`);
  }
  const cells = BigInt(total);
  const limit = ((1n << 64n) / cells) * cells;
  const message = new Uint8Array(seed.length + token.length);
  message.set(seed);
  message.set(token, seed.length);
  // The first k accepted words of the XOF stream; Python reads 2k words, then 4k, 8k, ...
  // of the same stream (a prefix), which accepts the same words.
  for (let words = 2 * k; ; words *= 2) {
    const stream = shake256(message, { dkLen: 8 * words });
    const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
    const items = new Int32Array(k);
    const factors = new Uint8Array(k);
    let found = 0;
    for (let j = 0; j < words && found < k; j++) {
      const w = view.getBigUint64(8 * j, true);
      if (w >= limit) continue;
      const c = Number(w % cells);
      items[found] = Math.floor(c / nFactors);
      factors[found] = c % nFactors;
      found++;
    }
    if (found === k) return { items, factors };
  }
}
