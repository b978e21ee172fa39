/** Python -> TypeScript conformance: the fixtures scripts/write_js_fixtures.py writes. */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ConfigError, MessageError, TamperedCiphertextError, associatedData, decodeMessage,
  decodeProtocolInfo, keyPairFromPrivate, openBox, ready, runId, sealWithEphemeral,
} from "../src/index.js";
import { DECODERS, ENCODERS, fromHex, input, plain, readFixture, toHex } from "./fixture_io.js";

interface Valid { name: string; kind: string; fields: Record<string, unknown>; hex: string }
interface Invalid { name: string; decodeAs: string; hex: string }

const messages = readFixture<{ valid: Valid[]; invalid: Invalid[] }>("python", "messages.json");

test("every kind a dplcf-sp or fmf-ldp device sends or reads is in the fixtures", () => {
  const kinds = new Set(messages.valid.map((v) => v.kind));
  assert.deepEqual([...kinds].sort(), Object.keys(DECODERS).sort());
  assert.ok(messages.invalid.length >= 20);
});

for (const v of messages.valid) {
  test(`python message ${v.name}: decode == fields, encode == bytes`, () => {
    const bytes = fromHex(v.hex);
    assert.deepEqual(plain(DECODERS[v.kind]!(bytes)), v.fields);
    const any = decodeMessage(bytes);
    assert.equal(any.kind, v.kind);
    assert.equal(toHex(ENCODERS[v.kind]!(input(v.fields))), v.hex);
  });
}

for (const bad of messages.invalid) {
  test(`python invalid message ${bad.name} is refused as a MessageError`, () => {
    assert.throws(() => DECODERS[bad.decodeAs]!(fromHex(bad.hex)), MessageError);
  });
}

interface Box {
  name: string; recipientPrivate: string; recipientPublic: string; ephemeralPrivate: string;
  aad: string; plaintext: string; box: string;
}
interface Aad {
  proxyPublic: string; serverPublic: string; runId: string; roundId: string; messageId: string;
  role: "proxy" | "server"; aad: string;
}
const seal = readFixture<{ boxes: Box[]; associatedData: Aad[] }>("python", "seal.json");

for (const b of seal.boxes) {
  test(`python sealed box ${b.name}: reproduced from its ephemeral key, opened, tamper refused`,
    async () => {
      await ready();
      const keys = keyPairFromPrivate(fromHex(b.recipientPrivate));
      assert.equal(toHex(keys.publicKey), b.recipientPublic);
      const box = fromHex(b.box);
      const aad = fromHex(b.aad);
      assert.equal(toHex(sealWithEphemeral(fromHex(b.ephemeralPrivate), keys.publicKey,
        fromHex(b.plaintext), aad)), b.box);
      assert.equal(toHex(openBox(keys, box, aad)), b.plaintext);
      const tampered = box.slice();
      tampered[tampered.length - 1]! ^= 0x80;
      assert.throws(() => openBox(keys, tampered, aad), TamperedCiphertextError);
      const otherAad = Uint8Array.from([...aad, 0]);
      assert.throws(() => openBox(keys, box, otherAad), TamperedCiphertextError);
    });
}

test("python run ids and associated data", () => {
  for (const a of seal.associatedData) {
    const run = runId(fromHex(a.proxyPublic), fromHex(a.serverPublic));
    assert.equal(toHex(run), a.runId);
    assert.equal(toHex(associatedData(run, BigInt(a.roundId), fromHex(a.messageId), a.role)), a.aad);
  }
});

interface Configs { valid: Record<string, unknown>[]; invalid: { name: string; doc: unknown; field: string }[] }
const configs = readFixture<Configs>("python", "configs.json");

for (const doc of configs.valid) {
  test(`python protocol ${String(doc.system)} (${configs.valid.indexOf(doc)}) decodes, config as sent`,
    () => {
      const info = decodeProtocolInfo(doc);
      assert.equal(info.family, doc.family);
      assert.equal(info.nItems, doc.n_items);
      assert.deepEqual(info.config, doc.config);
      assert.deepEqual(Object.keys(info.config), Object.keys(doc.config as object));
    });
}

for (const bad of configs.invalid) {
  test(`python invalid protocol ${bad.name} is refused, naming ${bad.field}`, () => {
    assert.throws(() => decodeProtocolInfo(bad.doc), (e: unknown) => {
      assert.ok(e instanceof ConfigError, String(e));
      assert.match(e.message, new RegExp(`\\b${bad.field}\\b`));
      return true;
    });
  });
}
