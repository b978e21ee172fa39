/** dp-pop's SystemSteps in jsdev's DeviceClient end to end (fake services): the terms under
 * the default policy with Python's sizes, one proved upload charged and sent, which the
 * Leader and the Helper (the verifier side of this SDK) accept and which sums to a vector in
 * the check; the scores are the released counts; hostile published values are refused. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeviceClient } from "../src/device.js";
import { parseDescription } from "../src/description.js";
import { openNodeLedger } from "../src/node.js";
import { keyPairFromPrivate, openBox, ready } from "../src/seal.js";
import * as F from "../src/prio3/field64.js";
import { dpPopCheck } from "../src/prio3/contribution.js";
import { verifierSharesToMessage, verifyInit, verifyNext } from "../src/prio3/verify.js";
import { boundData } from "../src/secure_sum/proved.js";
import { runId } from "../src/seal.js";
import type { DpPopPlaintext } from "../src/systems/dp_pop.js";
import { dpPopSteps, type DpPopCalibration, type DpPopStepOptions } from "../src/systems/dp_pop_steps.js";
import { FakeProxy, FakeServer } from "./helpers/services.js";

const PY = new URL("../../fixtures/python/", import.meta.url);
const fx = JSON.parse(readFileSync(new URL("prio3_dp_pop_1682.json", PY), "utf8"));
const models = JSON.parse(readFileSync(new URL("dp_pop_model.json", PY), "utf8"));
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, "hex"));
const key = (b: number): Uint8Array => new Uint8Array(32).map((_, i) => (b + i) & 0xff);

const CAL: DpPopCalibration = { muShare: fx.round.mu_share, terms: fx.terms, truncationTv: fx.round.truncation_tv };
const DOC = parseDescription({
  system: "dp-pop", family: "dp_pop", n_items: 1682, rounds: 1, aggregator: "secure",
  upload: "SumUpload", forward: "SumRelease",
  config: { epsilon: 1.0, delta: 1e-6, k: 50, sampling: "uniform", aggregation: "secure",
            min_honest: null, n_clients: 943, validity: "prio3" },
}).document;

async function setup(published: (proxyPub: Uint8Array) => Record<string, unknown>,
                     options: DpPopStepOptions = {}) {
  await ready();
  const proxy = keyPairFromPrivate(key(1));
  const serverKeys = keyPairFromPrivate(key(101));
  const server = new FakeServer({ ...DOC });
  // Python's broadcast before the round, with this test's server key in place of its key
  const before = bytes(models.before);
  before.set(serverKeys.publicKey, before.length - 32);
  server.artefact = async () => ({ data: before });
  const fakeProxy = new FakeProxy();
  fakeProxy.state = { started: true, finished: false, round: 0, published: published(proxy.publicKey) };
  const ledger = await openNodeLedger(join(mkdtempSync(join(tmpdir(), "dprec-dppop-")), "state"), 10);
  const calls: string[] = [];
  const steps = dpPopSteps((config, n) => { calls.push(`${String(config["k"])}/${n}`); return CAL; }, options);
  const client = new DeviceClient({ clientId: 3, token: "secret-token", server, proxy: fakeProxy, ledger, steps: [steps] });
  return { client, fakeProxy, proxy, serverKeys, ledger, steps, calls };
}

const GOOD = (proxyPub: Uint8Array) => ({ secure_sum_proxy_key: hex(proxyPub), validity: { kind: "prio3", ...fx.terms } });

test("one dp-pop report through the DeviceClient: charged, sent, accepted by both aggregators", async () => {
  const plaintexts: DpPopPlaintext[] = [];
  const s = await setup(GOOD, { onPlaintext: (p) => plaintexts.push(p) });
  const terms = (await s.client.describe()).terms;
  assert.deepEqual(terms.roundBytes, [fx.round.upload_bytes]);
  assert.equal(terms.artefactBytes, fx.round.model_bytes);
  assert.ok(Math.abs(terms.delta - (1e-6 + fx.round.delta_cost_eps1)) < 1e-15);
  const history = { items: Array.from({ length: 70 }, (_, i) => 23 * i + 1) };
  const out = await s.client.report(history);
  assert.equal(out.status, "sent");
  assert.equal(out.epsilon, 1.0);
  assert.equal(out.bytes, fx.round.upload_bytes);
  const body = s.fakeProxy.received[0]!.body;
  // open both boxes and prepare, as the proxy (Helper) and the server (Leader) do
  const check = dpPopCheck(1682, fx.terms);
  const mid = body.subarray(18, 34), pub = body.subarray(34, 98);
  const helperEnd = 98 + 64 + 56;
  const run = runId(s.proxy.publicKey, s.serverKeys.publicKey);
  const helperShare = openBox(s.proxy, body.subarray(98, helperEnd), boundData(run, 0, mid, "proxy", pub));
  const leaderShare = openBox(s.serverKeys, body.subarray(helperEnd), boundData(run, 0, mid, "server", pub));
  const v = check.vdaf, cut = 8 * check.circuit.measLen, end = leaderShare.length - 32;
  const parts = [pub.slice(0, 32), pub.slice(32)];
  const vk = key(200);
  const [s0, vs0] = verifyInit(v, vk, check.ctx, 0, mid, parts, { measurement: F.decode(leaderShare.subarray(0, cut)),
    proofs: F.decode(leaderShare.subarray(cut, end)), blind: leaderShare.slice(end) });
  const [s1, vs1] = verifyInit(v, vk, check.ctx, 1, mid, parts, { seed: helperShare.slice(0, 32), blind: helperShare.slice(32) });
  const message = verifierSharesToMessage(v, check.ctx, [vs0, vs1]);
  const y = F.toBigInts(F.add(verifyNext(s0, message), verifyNext(s1, message))).map((x) => Number(F.centred(x)));
  assert.equal(check.circuit.refusal(y), "");
  // the caller's hook had the very plaintext the shares open to: y = v + z, v k-hot of the
  // user's items, z within [-T, T]
  assert.equal(plaintexts.length, 1);
  const [{ v: hv, y: hy }] = plaintexts as [DpPopPlaintext];
  assert.deepEqual(Array.from(hy), y);
  assert.equal(hv.reduce((a, b) => a + b, 0), 50);
  hv.forEach((x, i) => assert.ok(x === 0 || (x === 1 && history.items.includes(i))));
  assert.ok(hy.every((x, i) => Math.abs(x - hv[i]!) <= fx.terms.T));
  assert.ok(y.reduce((a, b) => a + b, 0) - 50 <= fx.terms.S);
  assert.ok(s.calls.length >= 1 && s.calls.every((c) => c === "50/1682"));
});

test("a proxy publishing another check, or no key, gets nothing; the scores are the released counts", async () => {
  const other = await setup((p) => ({ ...GOOD(p), validity: { kind: "prio3", ...fx.terms, B2: fx.terms.B2 + 1 } }));
  await assert.rejects(other.client.report({ items: [1, 2] }), /validity check/);
  assert.equal(other.fakeProxy.attempts.length, 0);
  const nokey = await setup((p) => ({ validity: GOOD(p).validity }));
  await assert.rejects(nokey.client.report({ items: [1, 2] }), /secure-sum key/);
  assert.equal(nokey.fakeProxy.attempts.length, 0);
  const s = await setup(GOOD);
  const terms = (await s.client.describe()).terms;
  const scores = await s.steps.scores!(terms, { items: [] }, bytes(models.after));
  assert.deepEqual(Array.from(scores), models.counts);
  await assert.rejects(s.steps.scores!(terms, { items: [] }, bytes(models.before)), /no counts yet/);
});
