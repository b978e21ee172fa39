/** The dp-pop device step end to end, and the TypeScript side's fixtures
 * (clients/js/fixtures/ts/dp_pop_upload*.json) that Python's Leader and Helper verify
 * (tests/clients/js/test_ts_prio3.py). The fixtures are rebuilt here from fixed randomness
 * and keys and must equal the committed files (DPREC_WRITE_FIXTURES=1 rewrites them). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { turboshake128 } from "@noble/hashes/sha3-addons.js";
import { keyPairFromPrivate, ready } from "../src/seal.js";
import { SecureSource } from "../src/random.js";
import { buildDpPopUpload, dpPopRoundCheck, dpPopVector, type DpPopRound } from "../src/systems/dp_pop.js";
import { proveAndSeal, provedUploadBytes } from "../src/secure_sum/proved.js";

const PY = new URL("../../fixtures/python/", import.meta.url);
const TS = new URL("../../fixtures/ts/", import.meta.url);
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

/** A known byte stream (TurboSHAKE128 of a label): fixtures only, never a device. */
function knownSource(label: string): SecureSource {
  const stream = turboshake128.create({ D: 0x1f }).update(new TextEncoder().encode(label));
  return new SecureSource((buf) => buf.set(stream.xof(buf.length)));
}

const key = (b: number): Uint8Array => new Uint8Array(32).map((_, i) => (b + i) & 0xff);

interface Case { file: string; python: string; muShare: number; items: number[] }
const CASES: Case[] = [
  { file: "dp_pop_upload.json", python: "prio3_dp_pop_small.json", muShare: 0.5,
    items: [1, 4, 9, 16, 25, 36, 38] },
  { file: "dp_pop_upload_1682.json", python: "prio3_dp_pop_1682.json", muShare: 0.4753490620809254, // its round.mu_share
    items: Array.from({ length: 80 }, (_, i) => 20 * i + 3) },
];

for (const c of CASES) {
  test(`${c.file}: a fixed-randomness dp-pop upload, equal to the committed fixture`, async () => {
    await ready();
    const py = JSON.parse(readFileSync(new URL(c.python, PY), "utf8"));
    const round: DpPopRound = { nItems: py.dimension, sampling: "uniform", muShare: c.muShare, terms: py.terms };
    if (py.round !== undefined) assert.equal(c.muShare, py.round.mu_share); // Python's calibration
    const proxy = keyPairFromPrivate(key(1)), server = keyPairFromPrivate(key(101));
    const rng = knownSource(`dprec ts fixture ${c.file}`);
    const check = dpPopRoundCheck(round);
    const fixed = { messageId: rng.bytes(16), rand: rng.bytes(check.randSize),
      proxyEphemeral: key(51), serverEphemeral: key(151) };
    // buildDpPopUpload's steps, keeping y (the noised row) for Python's check of the sum
    const y = dpPopVector(round, { items: c.items }, rng);
    const upload = proveAndSeal(check, proxy.publicKey, server.publicKey, y, 0, rng, fixed);
    assert.equal(upload.length, provedUploadBytes(check));
    const fixture = {
      round: { n_items: round.nItems, sampling: round.sampling, mu_share: round.muShare, terms: round.terms },
      history: c.items, round_id: 0, y: Array.from(y),
      proxy_private: hex(key(1)), server_private: hex(key(101)),
      proxy_public: hex(proxy.publicKey), server_public: hex(server.publicKey),
      upload: hex(upload),
    };
    const text = JSON.stringify(fixture, null, 1) + "\n";
    const path = new URL(c.file, TS);
    if (process.env.DPREC_WRITE_FIXTURES === "1") writeFileSync(path, text);
    assert.equal(readFileSync(path, "utf8"), text, "stale TS fixture: rerun with DPREC_WRITE_FIXTURES=1");
  });
}

test("a fresh upload (the platform's CSPRNG) has the round's size and differs each time", async () => {
  await ready();
  const py = JSON.parse(readFileSync(new URL("prio3_dp_pop_small.json", PY), "utf8"));
  const round: DpPopRound = { nItems: py.dimension, sampling: "uniform", muShare: 0.5, terms: py.terms };
  const keys = { proxyKey: keyPairFromPrivate(key(1)).publicKey, serverKey: keyPairFromPrivate(key(101)).publicKey,
    publishedValidity: { kind: "prio3", ...py.terms } };
  const rng = new SecureSource();
  const a = buildDpPopUpload(round, { items: [1, 2, 3] }, keys, 0, rng);
  const b = buildDpPopUpload(round, { items: [1, 2, 3] }, keys, 0, rng);
  assert.equal(a.length, provedUploadBytes(dpPopRoundCheck(round)));
  assert.notEqual(hex(a), hex(b));
});

test("refusals: another published check, one key for both roles, a bad item", async () => {
  await ready();
  const py = JSON.parse(readFileSync(new URL("prio3_dp_pop_small.json", PY), "utf8"));
  const round: DpPopRound = { nItems: py.dimension, sampling: "uniform", muShare: 0.5, terms: py.terms };
  const pk = keyPairFromPrivate(key(1)).publicKey, sk = keyPairFromPrivate(key(101)).publicKey;
  const good = { kind: "prio3", ...py.terms };
  const rng = new SecureSource();
  assert.throws(() => buildDpPopUpload(round, { items: [1] },
    { proxyKey: pk, serverKey: sk, publishedValidity: { ...good, T: good.T + 1 } }, 0, rng), /validity check/);
  assert.throws(() => buildDpPopUpload(round, { items: [1] },
    { proxyKey: pk, serverKey: pk, publishedValidity: good }, 0, rng), /different keys/);
  assert.throws(() => buildDpPopUpload(round, { items: [1] },
    { proxyKey: pk, serverKey: new Uint8Array(32), publishedValidity: good }, 0, rng), /low-order/);
  assert.throws(() => buildDpPopUpload(round, { items: [40] },
    { proxyKey: pk, serverKey: sk, publishedValidity: good }, 0, rng), /distinct integers/);
});
