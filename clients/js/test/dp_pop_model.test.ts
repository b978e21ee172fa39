/** dp-pop's broadcast read as Python writes it (fixtures/python/dp_pop_model.json), its
 * refusals, and the round's sizes and truncation cost as Python's deployment computes them. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { decodePopularity, dpPopShape } from "../src/systems/dp_pop_model.js";
import type { DpPopRound } from "../src/systems/dp_pop.js";

const PY = new URL("../../fixtures/python/", import.meta.url);
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, "hex"));
const load = (name: string) => JSON.parse(readFileSync(new URL(name, PY), "utf8")); // eslint-disable-line

test("the model before and after the round, as Python writes it", () => {
  const fx = load("dp_pop_model.json");
  const before = decodePopularity(bytes(fx.before), fx.n_items);
  assert.equal(hex(before.serverKey), fx.server_key);
  assert.equal(before.counts.length, 0);
  const after = decodePopularity(bytes(fx.after), fx.n_items);
  assert.deepEqual(Array.from(after.counts), fx.counts);
  assert.equal(after.contributors, fx.contributors);
  assert.equal(hex(after.serverKey), fx.server_key);
});

test("a hostile model is refused: short, long, another kind, another item count", () => {
  const fx = load("dp_pop_model.json");
  const after = bytes(fx.after);
  assert.throws(() => decodePopularity(after.subarray(0, after.length - 1), fx.n_items), /bytes/);
  const longer = new Uint8Array(after.length + 8);
  longer.set(after);
  assert.throws(() => decodePopularity(longer, fx.n_items), /bytes/);
  const kind = after.slice();
  kind[5] = 41;
  assert.throws(() => decodePopularity(kind, fx.n_items), /kind 42/);
  assert.throws(() => decodePopularity(after, fx.n_items - 1), /no counts/);
});

test("the round's shape: Python's upload and model sizes and delta cost", () => {
  const fx = load("prio3_dp_pop_1682.json");
  const round: DpPopRound = { nItems: fx.dimension, sampling: "uniform", muShare: fx.round.mu_share, terms: fx.terms };
  const shape = dpPopShape(round, fx.round.truncation_tv, 1.0);
  assert.deepEqual(shape.roundBytes, [fx.round.upload_bytes]);
  assert.equal(shape.artefactBytes, fx.round.model_bytes);
  assert.ok(Math.abs(shape.deltaCost - fx.round.delta_cost_eps1) <= 1e-12 * fx.round.delta_cost_eps1);
  assert.throws(() => dpPopShape(round, 1.5, 1.0), /total variation/);
});
