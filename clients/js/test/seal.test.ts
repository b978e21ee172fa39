import { test } from "node:test";
import assert from "node:assert/strict";
import {
  MalformedUploadError, OVERHEAD, TamperedCiphertextError, WrongRecipientError,
  associatedData, generateKeyPair, keyPairFromPrivate, openBox, ready, runId, seal,
  sealWithEphemeral,
} from "../src/index.js";

const enc = new TextEncoder();
const seq = (start: number, n: number) => Uint8Array.from({ length: n }, (_, i) => start + i);

test("a box opens to its plaintext, with OVERHEAD bytes added, a fresh ephemeral each time",
  async () => {
    await ready();
    const r = generateKeyPair();
    const a = seal(r.publicKey, enc.encode("hello"), enc.encode("aad"));
    const b = seal(r.publicKey, enc.encode("hello"), enc.encode("aad"));
    assert.equal(a.length, 5 + OVERHEAD);
    assert.notDeepEqual(a, b);
    assert.deepEqual(openBox(r, a, enc.encode("aad")), enc.encode("hello"));
  });

test("a known answer of Python's sealed.py (_seal_with_ephemeral)", async () => {
  await ready();
  const r = keyPairFromPrivate(seq(1, 32));
  assert.equal(Buffer.from(r.publicKey).toString("hex"),
    "07a37cbc142093c8b755dc1b10e86cb426374ad16aa853ed0bdfc0b2b86d1c7c");
  const box = sealWithEphemeral(seq(33, 32), r.publicKey, enc.encode("hello"), enc.encode("aad"));
  assert.equal(Buffer.from(box).toString("hex"),
    "5869aff450549732cbaaed5e5df9b30a6da31cb0e5742bad5ad4a1a768f1a67b" +
    "aaa8fff703b50b22" + "6a0b8add69189f751634553493f7c5b0d0468080be");
});

test("tampered box, other aad, other recipient and short box are refused by type", async () => {
  await ready();
  const r = generateKeyPair();
  const other = generateKeyPair();
  const aad = enc.encode("aad");
  const box = seal(r.publicKey, enc.encode("secret"), aad);
  for (let i = 0; i < box.length; i++) {
    if (i >= 32 && i < 40) continue; // the key id: a wrong-recipient refusal, tested below
    const bad = box.slice();
    bad[i]! ^= 1;
    assert.throws(() => openBox(r, bad, aad), TamperedCiphertextError, `byte ${i}`);
  }
  assert.throws(() => openBox(r, box, enc.encode("aae")), TamperedCiphertextError);
  assert.throws(() => openBox(other, box, aad), WrongRecipientError);
  assert.throws(() => openBox(r, box.subarray(0, OVERHEAD - 1), aad), MalformedUploadError);
  assert.throws(() => seal(seq(0, 31), enc.encode("x"), aad), MalformedUploadError);
});

test("a low-order ephemeral key is refused as tampered, not opened", async () => {
  await ready();
  const r = generateKeyPair();
  const box = seal(r.publicKey, enc.encode("x"), new Uint8Array(0));
  box.fill(0, 0, 32); // the identity point: X25519 gives the all-zero secret
  assert.throws(() => openBox(r, box, new Uint8Array(0)), TamperedCiphertextError);
});

test("run id and associated data have Python's layout", () => {
  const run = runId(seq(1, 32), seq(2, 32));
  assert.equal(run.length, 16);
  const aad = associatedData(run, 258n, seq(9, 16), "server");
  const label = "dprec secure-sum v2|";
  assert.equal(aad.length, label.length + 16 + 8 + 16 + "server".length);
  assert.deepEqual(aad.subarray(label.length + 16, label.length + 24),
    Uint8Array.from([0, 0, 0, 0, 0, 0, 1, 2]));
  assert.throws(() => associatedData(run, -1, seq(9, 16), "server"), MalformedUploadError);
  assert.throws(() => associatedData(run.subarray(1), 1, seq(9, 16), "proxy"),
    MalformedUploadError);
});

// secure_sum/proved.ts (jsprio's dp-pop upload) calls it only under its `fixed` option, which
// only its test vectors pass.
const FIXED_SEAL_USERS = ["seal.ts", "secure_sum/proved.ts"];

test("no SDK module but the allowed ones calls sealWithEphemeral (test vectors only)", async () => {
  const { readdirSync, readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const root = fileURLToPath(new URL("../../src/", import.meta.url));
  const users = (readdirSync(root, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts") && readFileSync(root + f, "utf8").includes("sealWithEphemeral("))
    .map((f) => f.replaceAll("\\", "/"));
  assert.ok(users.includes("seal.ts"));
  assert.deepEqual(users.filter((f) => !FIXED_SEAL_USERS.includes(f)), []);
});
