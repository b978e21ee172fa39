import { test } from "node:test";
import assert from "node:assert/strict";
import { turboshake128 } from "@noble/hashes/sha3-addons.js";
import { VERSION, encodeItemMatrix } from "../src/index.js";

test("the toolchain builds and the XOF is TurboSHAKE128", () => {
  // one format version, the one every message's header carries (byte 4)
  assert.equal(VERSION, 2);
  assert.equal(encodeItemMatrix({ rows: 1, cols: 1, matrix: [0] })[4], VERSION);
  // RFC 9861 section 5: TurboSHAKE128(M = empty, D = 0x1F, 32) test vector.
  const out = turboshake128(new Uint8Array(0), { D: 0x1f, dkLen: 32 });
  assert.equal(Buffer.from(out).toString("hex"),
    "1e415f1c5983aff2169217277d17bb538cd945a397ddec541f1ce41af2c1b74c");
});
