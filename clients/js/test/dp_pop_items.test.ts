/** dp-pop's k-hot part (Python: draws.device_vector, deploy.own_items): k of the user's
 * items, uniformly (each item chosen w.p. k / |H|, a chi-square test at p = 1e-6), or the k
 * most recent with ties to the smaller id; all of them when the user has at most k. The
 * noise is switched off (mu tiny) to see the k-hot row alone. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { SecureSource } from "../src/random.js";
import { dpPopVector, ownItems, type DpPopRound } from "../src/systems/dp_pop.js";

const TERMS = { T: 3, S: 5, B2: 40, k: 4, proofs: 3 };
const QUIET: DpPopRound = { nItems: 30, sampling: "uniform", muShare: 1e-12, terms: TERMS };
const CHI2_9DOF_1E6 = 44.81; // scipy.stats.chi2.isf(1e-6, 9)

test("uniform: exactly k of the user's items, each w.p. k / |H|", () => {
  const history = { items: [2, 5, 7, 11, 13, 17, 19, 23, 27, 29] };
  const rng = new SecureSource();
  const counts = new Map<number, number>(history.items.map((i) => [i, 0]));
  const runs = 4000;
  for (let r = 0; r < runs; r++) {
    const y = dpPopVector(QUIET, history, rng);
    const ones = Array.from(y.entries()).filter(([, v]) => v !== 0);
    assert.equal(ones.length, TERMS.k);
    for (const [i, v] of ones) {
      assert.equal(v, 1);
      counts.set(i, counts.get(i)! + 1);
    }
  }
  const expected = runs * TERMS.k / history.items.length;
  let chi = 0;
  for (const c of counts.values()) chi += (c - expected) ** 2 / expected;
  assert.ok(chi < CHI2_9DOF_1E6, `chi-square ${chi}`);
});

test("at most k items: all of them; recency: the k latest, ties to the smaller id", () => {
  const y = dpPopVector(QUIET, { items: [3, 9] }, new SecureSource());
  assert.deepEqual(Array.from(y.entries()).filter(([, v]) => v).map(([i]) => i), [3, 9]);
  const h = { items: [8, 3, 5, 1, 9, 4], values: [10, 30, 30, 5, 20, 30] };
  assert.deepEqual(ownItems(h, 4, "recency"), [3, 4, 5, 9]);
  assert.deepEqual(ownItems(h, 4, "uniform"), [8, 3, 5, 1, 9, 4]);
  assert.throws(() => ownItems({ items: [1, 2, 3, 4, 5] }, 4, "recency"), /time of every item/);
});
