/** The steps in DeviceClient's shape: terms values, artefact bytes and the proxy's secret. */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  BadReply, DprecError, MessageError, assignedCells, decodeGradientReports, decodeObfuscatedBits,
  dplcfBuild, dplcfScoresOf, encodeItemMatrix, encodeItemMatrix64, encodeNeighbourLists, fmfBuild,
  fmfScoresOf, roundSeed, type StepContextLike, type StepTerms,
} from "../src/index.js";
import { SeededSource } from "./seeded_source.js";

const N = 6;
const V = Float64Array.from({ length: N * 2 }, (_, j) => 0.3 * Math.sin(j + 2));

function context(terms: StepTerms, artefact: Uint8Array, secret: unknown = {}): StepContextLike {
  return { terms, history: { items: [1, 4] }, rng: new SeededSource("ctx"), clientId: 5,
    artefact: async () => artefact, clientSecret: async () => secret };
}

test("dplcfBuild and dplcfScoresOf read the terms and the neighbour lists' bytes", async () => {
  const terms = { nItems: N, mechanism: "symmetric", epsilon: 1, artefact: "neighbours",
    values: { neighbours: 2, neighbourhood: "item" } };
  const body = await dplcfBuild(context(terms, new Uint8Array(0)));
  assert.equal(decodeObfuscatedBits(body).nItems, N);
  const lists = encodeNeighbourLists({ nItems: N, k: 1, indices: [1, 2, 3, 4, 5, 0],
    sims: [0.5, 0.4, 0.3, 0.2, 0.1, 0.9] });
  const scores = await dplcfScoresOf(terms, { items: [1, 4] }, lists);
  assert.deepEqual(Array.from(scores), [0.5, 0, 0, Math.fround(0.2), 0, 0]); // neighbours 1 and 4 held
  await assert.rejects(dplcfScoresOf({ ...terms, nItems: N + 1 }, { items: [1] }, lists), MessageError);
  await assert.rejects(dplcfScoresOf({ ...terms, values: { neighbours: 2, neighbourhood: "user" } },
    { items: [1] }, lists), MessageError);
  await assert.rejects(dplcfBuild(context({ ...terms, mechanism: "none", epsilon: null },
    new Uint8Array(0))), DprecError);
});

test("fmfBuild: chosen on the float32 V, assigned on the float64 V and the proxy's token",
  async () => {
    const values = { cells: "chosen", k: 4, factors: 2, alpha: 1, regularization: 0.1, clip: 1 };
    const terms = { nItems: N, mechanism: "binary", epsilon: 2, artefact: "item-matrix", values };
    const f32 = encodeItemMatrix({ rows: N, cols: 2, matrix: V });
    assert.equal(decodeGradientReports(await fmfBuild(context(terms, f32))).items.length, 4);
    await assert.rejects(fmfBuild(context(terms, encodeItemMatrix({ rows: N, cols: 3,
      matrix: new Float32Array(3 * N) }))), MessageError);
    const assigned = { ...terms, artefact: "item-matrix-f64", values: { ...values, cells: "assigned" } };
    const f64 = encodeItemMatrix64({ rows: N, cols: 2, matrix: V });
    const token = "0f".repeat(32);
    const m = decodeGradientReports(await fmfBuild(context(assigned, f64, { cells_token: token })));
    const want = assignedCells(roundSeed(V, N, 2), Uint8Array.from({ length: 32 }, () => 15), 4, N, 2);
    assert.deepEqual([m.items, m.factors], [want.items, want.factors]);
    for (const bad of [{}, { cells_token: "0f" }, null, "x"]) {
      await assert.rejects(fmfBuild(context(assigned, f64, bad)), BadReply, JSON.stringify(bad));
    }
    const scores = await fmfScoresOf(terms, { items: [1, 4] }, f32);
    assert.equal(scores.length, N);
  });
