/**
 * The TypeScript side of the wire conformance fixtures (issue 34 §1): what the TS encoders,
 * seal and device steps produce from fixed inputs, for Python to decode, open and check
 * (tests/clients/js/test_ts_fixtures.py). Deterministic: `npm run fixtures` writes them to
 * clients/js/fixtures/ts/ (scripts/write_fixtures.mjs), and ts_fixtures_drift.test.ts checks
 * the committed files are what this module builds now, so a change to a TS encoder breaks
 * a test until the fixtures are rewritten and Python agrees with them.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import {
  associatedData, decodeNeighbourLists, dplcfScores, dplcfStep, fmfScores, encodeGradientReports, encodeItemMatrix, encodeItemMatrix64,
  encodeNeighbourLists, encodeObfuscatedBits, encodeShuffledReports, encodeShuffledValues,
  encodeValueReports, fmfStep, keyPairFromPrivate, packBits, ready, runId, sealWithEphemeral,
} from "../src/index.js";
import { SeededSource } from "./seeded_source.js";
import { DECODERS, plain, toHex } from "./fixture_io.js";

export const FORMAT = "dprec js conformance fixtures v1";

/** Strict JSON, one list entry per line (the Python writer's layout). */
export function dump(doc: Record<string, unknown>): string {
  const value = (v: unknown) => Array.isArray(v)
    ? "[\n" + v.map((x) => JSON.stringify(x)).join(",\n") + "\n]" : JSON.stringify(v);
  return "{\n" + Object.entries(doc).map(([k, v]) => `${JSON.stringify(k)}: ${value(v)}`)
    .join(",\n") + "\n}\n";
}

function key(label: string): Uint8Array {
  return sha256(new TextEncoder().encode(`dprec ts fixture ${label}`));
}

function message(name: string, kind: string, bytes: Uint8Array) {
  return { name, kind, fields: plain(DECODERS[kind]!(bytes)), hex: toHex(bytes) };
}

function messagesDoc(): Record<string, unknown> {
  const items = [0, 1, 1681, 16777215, 12, 99, 5, 7, 8, 1000, 3];
  const factors = [0, 255, 3, 1, 2, 9, 0, 4, 4, 7, 1];
  const bits = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1];
  const values = [0.5, -1.25, 3.0e-39, 1e30, -7.75, 0.1, 2, -2, 0, 1, 6.5];
  const valid = [
    message("ts-gradient-reports-11", "GradientReports",
      encodeGradientReports({ clientId: -(1n << 63n), items, factors, bits })),
    message("ts-gradient-reports-empty", "GradientReports",
      encodeGradientReports({ clientId: 0, items: [], factors: [], bits: [] })),
    message("ts-value-reports-11", "ValueReports",
      encodeValueReports({ clientId: (1n << 63n) - 1n, items, factors, values })),
    message("ts-shuffled-reports-8", "ShuffledReports", encodeShuffledReports({
      items: items.slice(0, 8), factors: factors.slice(0, 8), bits: bits.slice(0, 8) })),
    message("ts-shuffled-values-2", "ShuffledValues", encodeShuffledValues({
      items: items.slice(0, 2), factors: factors.slice(0, 2), values: values.slice(0, 2) })),
    message("ts-item-matrix-2x3", "ItemMatrix", encodeItemMatrix({
      epoch: 5, rows: 2, cols: 3, matrix: [0.1, 0.2, -0.3, 1e-3, 65504, -1e-38] })),
    message("ts-item-matrix64-2x2", "ItemMatrix64", encodeItemMatrix64({
      epoch: -(1n << 40n), rows: 2, cols: 2, matrix: [0.1, Math.PI, -1e308, 5e-324] })),
    message("ts-obfuscated-bits-2x11", "ObfuscatedBits", encodeObfuscatedBits({
      clients: 2, nItems: 11, packed: [...packBits(bits), ...packBits(bits.map((b) => 1 - b))] })),
    message("ts-neighbour-lists-3x2", "NeighbourLists", encodeNeighbourLists({
      nItems: 3, k: 2, indices: [1, 2, 0, 2, 1, 0], sims: [0.9, 0.1, 0.5, 0.25, 1, -0.5],
      full: [1, 0.9, 0.1, 0.5, 1, 0.25, -0.5, 1, 1] })),
  ];
  return { format: FORMAT, valid };
}

function sealDoc(): Record<string, unknown> {
  const recipient = keyPairFromPrivate(key("recipient"));
  const proxy = keyPairFromPrivate(key("proxy"));
  const server = keyPairFromPrivate(key("server"));
  const run = runId(proxy.publicKey, server.publicKey);
  const messageId = key("message id").slice(0, 16);
  const cases: [string, Uint8Array, Uint8Array][] = [
    ["ts-short", new TextEncoder().encode("aad"), new TextEncoder().encode("from typescript")],
    ["ts-empty-plaintext", new Uint8Array(0), new Uint8Array(0)],
    ["ts-secure-sum-aad", associatedData(run, 9n, messageId, "proxy"),
      Uint8Array.from({ length: 700 }, (_, j) => (j * 37) & 0xff)],
  ];
  const boxes = cases.map(([name, aad, plaintext], i) => {
    const eph = key(`ephemeral ${i}`);
    return {
      name, recipientPrivate: toHex(recipient.privateKey), recipientPublic: toHex(recipient.publicKey),
      ephemeralPrivate: toHex(eph), aad: toHex(aad), plaintext: toHex(plaintext),
      box: toHex(sealWithEphemeral(eph, recipient.publicKey, plaintext, aad)),
    };
  });
  const aads = [[9n, "proxy"], [(1n << 64n) - 1n, "server"]].map(([round, role]) => ({
    proxyPublic: toHex(proxy.publicKey), serverPublic: toHex(server.publicKey), runId: toHex(run),
    roundId: String(round), messageId: toHex(messageId), role,
    aad: toHex(associatedData(run, round as bigint, messageId, role as "proxy" | "server")),
  }));
  return { format: FORMAT, boxes, associatedData: aads };
}

const N = 40;
const F = 4;
const V = Float64Array.from({ length: N * F }, (_, j) => 0.2 * Math.cos(3 * j + 1));
const HISTORY = { items: [0, 3, 7, 8, 20, 39], values: [5, 4, 1, 2, 3, 5] };

function fmfConfig(mechanism: string, cells: string, k: number): Record<string, unknown> {
  return {
    factors: F, regularization: 0.01, lr: 0.001, alpha: 1, epochs: 3, server_steps: 20,
    epsilon: 2, k, clip: 1, mechanism, exact: false, init_scale: 0.1, shuffle_threshold: 100,
    user_budget: null, delta: 1e-6, batch_size: 8192, allow_no_update: false, cells,
    aggregator: "mean",
  };
}

function stepsDoc(): Record<string, unknown> {
  const dplcf = {
    system: "dplcf-sp", family: "dplcf", n_items: N, aggregator: "mean",
    config: { flip: "symmetric", estimator: "unbiased", epsilon: 1.5, neighbours: 5,
      neighbourhood: "item", batch_size: 4096, aggregator: "mean", history_cap: null },
  };
  const steps: Record<string, unknown>[] = [{
    name: "ts-dplcf-sp", protocol: dplcf, history: HISTORY, clientId: "11",
    message: toHex(dplcfStep({ nItems: N, mechanism: "symmetric", epsilon: 1.5 }, HISTORY,
      new SeededSource("steps/dplcf"))),
  }];
  const token = key("cells token");
  const f32 = Float32Array.from(V);
  for (const [mechanism, cells] of [["binary", "chosen"], ["piecewise", "chosen"],
    ["binary", "assigned"], ["piecewise", "assigned"]] as const) {
    const k = 25;
    const assigned = cells === "assigned";
    const matrix = assigned ? V : f32;
    const artefact = assigned ? encodeItemMatrix64({ epoch: 1, rows: N, cols: F, matrix: V })
      : encodeItemMatrix({ epoch: 1, rows: N, cols: F, matrix: f32 });
    const terms = { nItems: N, factors: F, k, alpha: 1, regularization: 0.01, clip: 1,
      mechanism, epsilon: 2, cells, cellsToken: assigned ? token : undefined };
    steps.push({
      name: `ts-fmf-ldp-${mechanism}-${cells}`,
      protocol: { system: "fmf-ldp", family: "fmf", n_items: N, aggregator: "mean",
        config: fmfConfig(mechanism, cells, k) },
      history: HISTORY, clientId: "7", artefact: toHex(artefact),
      cellsToken: assigned ? toHex(token) : null,
      message: toHex(fmfStep(terms, HISTORY, { rows: N, cols: F, matrix }, 7n,
        new SeededSource(`steps/fmf/${mechanism}/${cells}`))),
    });
  }
  return { format: FORMAT, steps, scores: scoresCases() };
}

/** On-device scores from fixed broadcasts, for Python to recompute. */
function scoresCases(): Record<string, unknown>[] {
  const n = 9;
  const k = 3;
  const indices = Array.from({ length: n * k }, (_, j) => (Math.floor(j / k) + 1 + (j % k) * 2) % n);
  const sims = Array.from({ length: n * k }, (_, j) => Math.fround(0.5 + 0.4 * Math.sin(j)));
  const full = Array.from({ length: n * n }, (_, j) => Math.fround(0.5 + 0.5 * Math.cos(j * 1.7)));
  const listsBytes = encodeNeighbourLists({ nItems: n, k, indices, sims, full });
  const lists = decodeNeighbourLists(listsBytes);
  const history = { items: [1, 4, 5, 8], values: [1, 2, 1, 3] };
  const fmfHistory = HISTORY;
  return [
    ...(["item", "user"] as const).map((hood) => ({
      name: `ts-dplcf-scores-${hood}`, system: "dplcf", neighbourhood: hood, k,
      artefact: toHex(listsBytes), history,
      scores: Array.from(dplcfScores(lists, history, hood, k)),
    })),
    {
      name: "ts-fmf-scores", system: "fmf", alpha: 1, regularization: 0.01,
      artefact: toHex(encodeItemMatrix64({ epoch: 0, rows: N, cols: F, matrix: V })),
      history: fmfHistory,
      scores: Array.from(fmfScores({ rows: N, cols: F, matrix: V }, fmfHistory, 1, 0.01)),
    },
  ];
}

/** File name -> the text `npm run fixtures` writes into clients/js/fixtures/ts/. */
export async function buildTsFixtures(): Promise<Record<string, string>> {
  await ready();
  return { "messages.json": dump(messagesDoc()), "seal.json": dump(sealDoc()),
    "steps.json": dump(stepsDoc()) };
}
