import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeviceClient, recommend } from "../src/device.js";
import { BadReply, DprecError, PolicyViolation, RunChanged } from "../src/errors.js";
import { topK } from "../src/selection.js";
import { openNodeLedger } from "../src/node.js";
import { dpPop, dplcf, popTerms } from "./helpers/descriptions.js";
import { FakeProxy, FakeServer, RandomSteps } from "./helpers/services.js";

const N = 100;
const COST = N * 1.0; // dplcf-sp, symmetric, epsilon 1: N bits of eps 1
const HISTORY = { items: [3, 17, 42] };

async function device(options: { budget?: number; dir?: string; config?: Record<string, unknown>;
                                  steps?: RandomSteps; server?: FakeServer; proxy?: FakeProxy } = {}) {
  const dir = options.dir ?? join(mkdtempSync(join(tmpdir(), "dprec-device-")), "state");
  const server = options.server ?? new FakeServer({ ...dplcf(options.config, N).document });
  const proxy = options.proxy ?? new FakeProxy();
  const steps = options.steps ?? new RandomSteps("dplcf");
  const ledger = await openNodeLedger(dir, options.budget ?? 500);
  const client = new DeviceClient({ clientId: 7, token: "secret-token", server, proxy, ledger,
                                    steps: [steps] });
  return { client, server, proxy, steps, ledger, dir };
}

test("a report is charged before it is sent, once; the round asked again gets the same bytes", async () => {
  const d = await device();
  const first = await d.client.report(HISTORY);
  assert.deepEqual({ ...first, run: "" }, { status: "sent", round: 0, bytes: 6 + 8 + 13,
                                            epsilon: COST, run: "" });
  assert.equal(await d.ledger.spent(), COST);
  const again = await d.client.report(HISTORY); // the proxy answers 409 already submitted
  assert.equal(again.status, "resent");
  assert.equal(again.epsilon, 0);
  assert.equal(d.steps.builds, 1);
  assert.equal(d.proxy.received.length, 1);
  assert.deepEqual(d.proxy.attempts[1], d.proxy.attempts[0]);
  assert.equal(await d.ledger.spent(), COST);
});

test("a report past the budget is refused before anything is built, fetched or sent", async () => {
  const d = await device({ budget: COST - 1 });
  const out = await d.client.report(HISTORY);
  assert.equal(out.status, "budget");
  assert.equal(d.steps.builds, 0);
  assert.equal(d.server.artefactCalls, 0);
  assert.equal(d.proxy.attempts.length, 0);
  assert.equal(await d.ledger.spent(), 0);
  assert.equal(await d.ledger.locked((v) => v.message(out.run, 0)), null);
});

test("a protocol the policy refuses is refused before anything is computed or pinned", async () => {
  for (const config of [{ flip: "none" }, { flip: "asymmetric" }, { epsilon: 9 }]) {
    const d = await device({ config });
    await assert.rejects(d.client.report(HISTORY), PolicyViolation);
    assert.equal(d.steps.builds + d.proxy.attempts.length + d.server.artefactCalls, 0);
    assert.equal(await d.ledger.locked(async (v) => v.pinned()), null);
  }
  const good = dplcf({}, N).document;
  const d = await device({ server: new FakeServer({ ...good, config: {
    ...(good["config"] as Record<string, unknown>), neighbours: "50" } }) });
  await assert.rejects(d.client.report(HISTORY), BadReply);
  const ok = await device();
  await assert.rejects(ok.client.report({ items: [N] }), /integers in \[0, 100\)/);
  await assert.rejects(ok.client.report({ items: [1, 1] }), /twice/);
  assert.equal(d.steps.builds + ok.steps.builds, 0);
});

test("after a crash between charge and send, a new device re-sends the stored bytes bit for bit", async () => {
  const d = await device();
  d.proxy.failNext = 1;
  await assert.rejects(d.client.report(HISTORY), /network down/);
  assert.equal(await d.ledger.spent(), COST, "charged before sending");
  const restarted = await device({ dir: d.dir, server: d.server, proxy: d.proxy, steps: d.steps });
  const out = await restarted.client.report(HISTORY);
  assert.equal(out.status, "resent");
  assert.equal(d.steps.builds, 1, "never built again: no new noise");
  assert.deepEqual(d.proxy.received[0]?.body, d.proxy.attempts[0]);
  assert.equal(await restarted.ledger.spent(), COST);
});

test("a message stored but not charged (a crash in between) is charged once, then sent", async () => {
  const d = await device();
  const { run } = await d.client.describe();
  const body = Uint8Array.from({ length: 27 }, (_, i) => i);
  await d.ledger.locked(async (v) => { await v.pin(run); await v.storeMessage(run, 0, body); });
  const out = await d.client.report(HISTORY);
  assert.equal(out.status, "sent");
  assert.equal(out.epsilon, COST);
  assert.equal(d.steps.builds, 0);
  assert.deepEqual(d.proxy.received[0]?.body, body);
});

test("a round charged whose message is lost is not reported again", async () => {
  const d = await device();
  const { run } = await d.client.describe();
  await d.ledger.charge(`${run}/round-0`, COST);
  assert.equal((await d.client.report(HISTORY)).status, "lost");
  assert.equal(d.steps.builds + d.proxy.attempts.length, 0);
});

test("two devices of one user racing one round build, charge and store one message", async () => {
  const d = await device();
  const twin = await device({ dir: d.dir, server: d.server, proxy: d.proxy, steps: d.steps });
  const outs = await Promise.all([d.client.report(HISTORY), twin.client.report(HISTORY)]);
  assert.deepEqual(outs.map((o) => o.status).sort(), ["resent", "sent"]);
  assert.equal(d.steps.builds, 1);
  assert.equal(await d.ledger.spent(), COST);
  assert.deepEqual(d.proxy.attempts[0], d.proxy.attempts[1]);
});

test("another run is refused until joined; the budget spans the runs", async () => {
  const d = await device();
  await d.client.report(HISTORY);
  d.server.doc = { ...dplcf({ epsilon: 0.5 }, N).document };
  d.proxy.received.length = 0; // the new run's proxy
  await assert.rejects(d.client.report(HISTORY), RunChanged);
  await d.client.joinNewRun();
  const out = await d.client.report(HISTORY);
  assert.equal(out.status, "sent");
  assert.equal(out.epsilon, N * 0.5);
  assert.equal(await d.ledger.spent(), COST + N * 0.5);
});

test("a secure sum's run is charged its epsilon once, at its first round", async () => {
  const steps = new RandomSteps("dp_pop", popTerms(2));
  const d = await device({ steps, server: new FakeServer({ ...dpPop({}, N).document }) });
  const r0 = await d.client.report(HISTORY);
  d.proxy.state = { started: true, finished: false, round: 1, published: {} };
  const r1 = await d.client.report(HISTORY);
  assert.deepEqual([r0.epsilon, r1.epsilon, r0.bytes, r1.bytes], [1, 0, 1000, 1000]);
  assert.equal(await d.ledger.spent(), 1);
  assert.equal((await d.ledger.entries()).length, 2);
});

test("no round, not selected, a wrong-sized message, a bad round or artefact: nothing charged", async () => {
  const d = await device();
  d.proxy.state = { started: false, finished: false, round: 0 };
  assert.equal((await d.client.report(HISTORY)).status, "no-round");
  d.proxy.state = { started: true, finished: false, round: 0 };
  d.steps.answer = "none";
  assert.equal((await d.client.report(HISTORY)).status, "not-selected");
  d.steps.answer = "short";
  await assert.rejects(d.client.report(HISTORY), (e) => e instanceof DprecError && /expected 27/.test(e.message));
  d.steps.answer = "artefact";
  d.server.artefactSize = 10;
  await assert.rejects(d.client.report(HISTORY), (e) => e instanceof BadReply && /neighbour lists/.test(e.message));
  for (const state of [{ started: "yes", finished: false, round: 0 }, { started: true, finished: false, round: 1 },
                       { started: true, finished: false, round: -1 }, []]) {
    d.proxy.state = state as Record<string, unknown>;
    await assert.rejects(d.client.report(HISTORY), BadReply, JSON.stringify(state));
  }
  assert.equal(await d.ledger.spent(), 0);
  assert.equal(d.proxy.attempts.length, 0);
});

test("recommend: larger score first, ties by the smaller id, NaN last, seen items excluded", async () => {
  assert.deepEqual(topK([1, 3, 3, Number.NaN, 2, 3], 6), [1, 2, 5, 4, 0, 3]);
  assert.deepEqual(topK([0, 0, 0], 2), [0, 1]);
  assert.deepEqual(recommend([1, 3, 3, Number.NaN, 2, 3], { items: [2] }, 3), [1, 5, 4]);
  const d = await device();
  assert.deepEqual(await d.client.recommend({ items: [1] }, 3), [2, 5, 4]);
  assert.throws(() => topK([1], -1), /k must be/);
});
