/** Reading the conformance fixtures (clients/js/fixtures/) from the compiled tests. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  decodeGradientReports, decodeItemMatrix, decodeItemMatrix64, decodeNeighbourLists,
  decodeObfuscatedBits, decodeShuffledReports, decodeShuffledValues, decodeValueReports,
  encodeGradientReports, encodeItemMatrix, encodeItemMatrix64, encodeNeighbourLists,
  encodeObfuscatedBits, encodeShuffledReports, encodeShuffledValues, encodeValueReports,
} from "../src/index.js";

/** The folder clients/js/fixtures/<side>/ (the tests run from dist/test/). */
export function fixturePath(side: "python" | "ts", name: string): string {
  return fileURLToPath(new URL(`../../fixtures/${side}/${name}`, import.meta.url));
}

export function readFixture<T = any>(side: "python" | "ts", name: string): T {  // eslint-disable-line
  return JSON.parse(readFileSync(fixturePath(side, name), "utf8")) as T;
}

export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2) throw new Error(`odd hex length ${hex.length}`);
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

export function toHex(b: Uint8Array): string {
  return Buffer.from(b).toString("hex");
}

type Fields = Record<string, unknown>;

/** Plain JSON fields of a decoded message (bigints as decimal strings, arrays as lists). */
export function plain(m: object): Fields {
  const out: Fields = {};
  for (const [k, v] of Object.entries(m)) {
    if (typeof v === "bigint") out[k] = v.toString();
    else if (ArrayBuffer.isView(v)) out[k] = Array.from(v as unknown as ArrayLike<number>);
    else out[k] = v;
  }
  return out;
}

/** Encoder input from plain fields (decimal strings back to bigints). */
export function input(fields: Fields): any {  // eslint-disable-line
  const out: Fields = { ...fields };
  for (const k of ["clientId", "epoch"]) if (typeof out[k] === "string") out[k] = BigInt(out[k] as string);
  return out;
}

export const DECODERS: Record<string, (b: Uint8Array) => object> = {
  GradientReports: decodeGradientReports, ValueReports: decodeValueReports,
  ShuffledReports: decodeShuffledReports, ShuffledValues: decodeShuffledValues,
  ItemMatrix: decodeItemMatrix, ItemMatrix64: decodeItemMatrix64,
  ObfuscatedBits: decodeObfuscatedBits, NeighbourLists: decodeNeighbourLists,
};

export const ENCODERS: Record<string, (m: any) => Uint8Array> = {  // eslint-disable-line
  GradientReports: encodeGradientReports, ValueReports: encodeValueReports,
  ShuffledReports: encodeShuffledReports, ShuffledValues: encodeShuffledValues,
  ItemMatrix: encodeItemMatrix, ItemMatrix64: encodeItemMatrix64,
  ObfuscatedBits: encodeObfuscatedBits, NeighbourLists: encodeNeighbourLists,
};
