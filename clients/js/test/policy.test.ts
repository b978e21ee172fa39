import { test } from "node:test";
import assert from "node:assert/strict";
import { BadReply, DprecError, PolicyViolation } from "../src/errors.js";
import { DevicePolicy } from "../src/policy.js";
import { dplcfTerms, fmfTerms, type ProtocolTerms } from "../src/terms.js";
import { dpPop, dplcf, fmf, popTerms } from "./helpers/descriptions.js";

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(b));

test("dplcf-sp's terms: N bits in one 6 + 8 + ceil(N/8)-byte message, the neighbour lists' size", () => {
  const t = new DevicePolicy().read(dplcf(), dplcfTerms);
  assert.equal(t.messageBytes, 6 + 8 + 211);
  assert.equal(t.count, 1682);
  assert.equal(t.rounds, 1);
  assert.equal(t.artefactBytes, 15 + 8 * 1682 * 50);
  const user = new DevicePolicy().read(dplcf({ neighbourhood: "user" }, 10), dplcfTerms);
  assert.equal(user.artefactBytes, 15 + 8 * 10 * 9 + 4 * 100);
});

test("a bit flip's charge is Python's (PrivacyLedger.cost of BitFlip's event, N = 1682)", () => {
  // From Python: BitFlip.<mechanism>(eps).dp_event() through PrivacyLedger.cost(event, 1682).
  const golden: Array<[string, number, number]> = [
    ["symmetric", 1.0, 1682.0], ["symmetric", 0.37, 622.34], ["oue", 2.0, 2411.619356872452],
    ["oue", 0.5, 472.52392968911164], ["asymmetric", 1.5, 2523.0]];
  const policy = new DevicePolicy({ mechanisms: { dplcf: ["symmetric", "asymmetric", "oue"] } });
  for (const [flip, epsilon, cost] of golden) {
    const got = policy.cost(policy.read(dplcf({ flip, epsilon }), dplcfTerms));
    assert.ok(close(got, cost), `${flip} ${epsilon}: ${got} != ${cost}`);
  }
});

test("the one-sided flip is refused unless named; none is refused with why", () => {
  const policy = new DevicePolicy();
  assert.throws(() => policy.cost(policy.read(dplcf({ flip: "asymmetric" }), dplcfTerms)),
    (e) => e instanceof PolicyViolation && /accepts oue, symmetric for dplcf/.test(e.message));
  assert.throws(() => policy.cost(policy.read(dplcf({ flip: "none" }), dplcfTerms)),
    (e) => e instanceof PolicyViolation && /raw data/.test(e.message));
  assert.throws(() => new DevicePolicy({ mechanisms: { dplcf: ["none"] } }), /only mechanisms that add noise/);
  assert.throws(() => new DevicePolicy({ mechanisms: { lcf: ["symmetric"] } }), /unknown family/);
});

test("epsilon limits: per value, per round; a bit flip's own range is a bad reply", () => {
  const policy = new DevicePolicy({ maxEpsilonPerReport: 2, maxEpsilonPerRound: 100 });
  assert.throws(() => policy.cost(policy.read(dplcf({ epsilon: 3 }), dplcfTerms)),
    (e) => e instanceof PolicyViolation && /max_epsilon_per_report = 2/.test(e.message));
  assert.throws(() => policy.cost(policy.read(dplcf({ epsilon: 1 }), dplcfTerms)),
    (e) => e instanceof PolicyViolation && /max_epsilon_per_round = 100/.test(e.message));
  assert.equal(policy.cost(policy.read(dplcf({ epsilon: 1 }, 100), dplcfTerms)), 100);
  const loose = new DevicePolicy({ maxEpsilonPerReport: 1000 });
  assert.throws(() => loose.cost(loose.read(dplcf({ epsilon: 40 }), dplcfTerms)), BadReply);
  assert.throws(() => loose.cost(loose.read(dplcf({ epsilon: 1e-13 }), dplcfTerms)), BadReply);
});

test("malformed config fields are bad replies; sizes beyond the policy are violations", () => {
  const policy = new DevicePolicy({ maxNeighbours: 20 });
  for (const bad of [{ epsilon: -1 }, { epsilon: "1" }, { neighbours: 2.5 }, { neighbours: 0 },
                     { neighbourhood: "graph" }, { flip: "Symmetric" }, { epsilon: null }]) {
    assert.throws(() => policy.read(dplcf({ neighbours: 10, ...bad }), dplcfTerms), BadReply,
      JSON.stringify(bad));
  }
  assert.throws(() => policy.read(dplcf({ neighbours: 21 }), dplcfTerms),
    (e) => e instanceof PolicyViolation && /max_neighbours = 20/.test(e.message));
  assert.throws(() => new DevicePolicy({ maxItems: 1000 }).read(dplcf(), dplcfTerms),
    (e) => e instanceof PolicyViolation && /max_items = 1000/.test(e.message));
  assert.throws(() => new DevicePolicy({ maxMessageBytes: 200 }).read(dplcf(), dplcfTerms),
    (e) => e instanceof PolicyViolation && /max_message_bytes/.test(e.message));
  assert.throws(() => new DevicePolicy({ maxArtefactBytes: 1000 }).read(dplcf(), dplcfTerms),
    (e) => e instanceof PolicyViolation && /max_artefact_bytes/.test(e.message));
});

test("fmf-ldp: k reports of 4 + 1/8 bytes (binary) or 8 (piecewise), charged k x eps", () => {
  const policy = new DevicePolicy();
  const binary = policy.read(fmf(), fmfTerms);
  assert.equal(binary.messageBytes, 18 + 40 + 2);
  assert.equal(binary.artefactBytes, 22 + 4 * 1682 * 16);
  assert.equal(policy.cost(binary), 5);
  const piecewise = policy.read(fmf({ mechanism: "piecewise", cells: "assigned" }), fmfTerms);
  assert.equal(piecewise.messageBytes, 18 + 80);
  assert.equal(piecewise.artefact, "item-matrix-f64");
  assert.equal(piecewise.artefactBytes, 22 + 8 * 1682 * 16);
  assert.throws(() => policy.read(fmf({ k: 1001 }), fmfTerms), /max_k = 1000/);
  assert.throws(() => policy.read(fmf({ factors: 65 }), fmfTerms), /max_factors = 64/);
  assert.throws(() => policy.read(fmf({ regularization: 0 }), fmfTerms), BadReply);
  assert.throws(() => policy.cost(policy.read(fmf({ mechanism: "none" }), fmfTerms)), PolicyViolation);
});

test("dp-pop: the run's epsilon once, its delta, min_honest and n_clients within the policy", () => {
  const policy = new DevicePolicy();
  const t = policy.read(dpPop(), popTerms());
  assert.equal(policy.cost(t), 1.0);
  assert.equal(t.secureSum, true);
  assert.equal(t.minHonest, 20);
  assert.equal(policy.read(dpPop({ min_honest: null }), popTerms()).minHonest, 220);
  assert.throws(() => policy.cost(policy.read(dpPop({ epsilon: 6 }), popTerms())),
    (e) => e instanceof PolicyViolation && /epsilon 6 per run/.test(e.message));
  assert.throws(() => policy.cost(policy.read(dpPop(), popTerms(1, 1e-5))),
    (e) => e instanceof PolicyViolation && /max_delta/.test(e.message));
  assert.throws(() => dpPop({ min_honest: 221 }), BadReply); // the strict decoder's refusal
  const t221: ProtocolTerms = { ...t, minHonest: 221 };
  assert.throws(() => policy.cost(t221),
    (e) => e instanceof PolicyViolation && /min_honest = 221 of n_clients = 220/.test(e.message));
  assert.throws(() => new DevicePolicy({ maxMinHonest: 10 }).read(dpPop(), popTerms()),
    (e) => e instanceof PolicyViolation && /max_min_honest = 10/.test(e.message));
  assert.throws(() => new DevicePolicy({ maxClients: 100 }).read(dpPop(), popTerms()),
    (e) => e instanceof PolicyViolation && /max_clients = 100/.test(e.message));
  assert.throws(() => policy.read(dpPop({ delta: 0 }), popTerms()), BadReply);
  const tight = new DevicePolicy({ mechanisms: { dplcf: ["symmetric"] } });
  assert.throws(() => tight.cost(tight.read(dpPop(), popTerms())),
    (e) => e instanceof PolicyViolation && /accepts nothing for dp_pop/.test(e.message));
});

test("a report in the clear to a trusted aggregator: refused without trust_aggregator", () => {
  const base = new DevicePolicy().read(dplcf(), dplcfTerms);
  const trusted: ProtocolTerms = { ...base, trustedAggregator: true, noiseMultiplier: 0 };
  assert.throws(() => new DevicePolicy().cost(trusted), /trust_aggregator = true/);
  assert.throws(() => new DevicePolicy({ trustAggregator: true }).cost(trusted), /accept_no_dp/);
  assert.equal(new DevicePolicy({ trustAggregator: true, acceptNoDp: true }).cost(trusted), 0);
});

test("a policy file in Python's format: read, written back, unknown fields refused", () => {
  const p = DevicePolicy.fromJson({ max_epsilon_per_report: 2, max_epsilon_per_round: null,
                                    mechanisms: { dplcf: ["symmetric"] }, max_k: 50 });
  assert.equal(p.maxEpsilonPerRound, Infinity);
  assert.equal(p.maxK, 50);
  const doc = p.toJson();
  assert.equal(doc["max_epsilon_per_round"], null);
  assert.deepEqual(doc["mechanisms"], { dplcf: ["symmetric"] });
  assert.deepEqual(DevicePolicy.fromJson(doc).toJson(), doc);
  assert.throws(() => DevicePolicy.fromJson({ max_eps: 1 }), /unknown device policy field max_eps/);
  assert.throws(() => new DevicePolicy({ maxEpsilonPerReport: Infinity }), /finite/);
  assert.throws(() => new DevicePolicy({ maxItems: 0 }), /max_items/);
  assert.throws(() => new DevicePolicy({ maxDelta: 1 }), DprecError);
});

test("the run id hashes the description's run fields in canonical order, not role or limits", async () => {
  const { parseDescription, protocolRunId } = await import("../src/description.js");
  const doc = dplcf({}, 50).document;
  const shuffled = Object.fromEntries(Object.entries(doc).reverse());
  const a = protocolRunId(parseDescription(doc));
  assert.match(a, /^[0-9a-f]{64}$/);
  assert.equal(protocolRunId(parseDescription({ ...shuffled, role: { x: 1 }, limits: { y: 2 } })), a);
  const other = { ...doc, config: { ...(doc["config"] as object), epsilon: 2 } };
  assert.notEqual(protocolRunId(parseDescription(other)), a);
});
