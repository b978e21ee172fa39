/** The device's noise share has Python's distribution (SkellamMechanism(mu).noise:
 * Poisson(mu) - Poisson(mu) per coordinate, drawn with crypto.getRandomValues): a
 * chi-square goodness-of-fit test of dp-pop's own draws (the coordinates of y = v + z where
 * the user has no item) against the exact Skellam pmf, at p = 1e-6; the same test refuses
 * a share of the wrong variance, so it can fail. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { SecureSource } from "../src/random.js";
import { dpPopVector, type DpPopRound } from "../src/systems/dp_pop.js";
import { skellamShare } from "../src/secure_sum/truncation.js";

const PY = new URL("../../fixtures/python/", import.meta.url);
const MU: number = JSON.parse(readFileSync(new URL("prio3_dp_pop_1682.json", PY), "utf8")).round.mu_share;
const BINS = [-4, -3, -2, -1, 0, 1, 2, 3, 4]; // the ends collect the tails
const CHI2_8DOF_1E6 = 42.70; // scipy.stats.chi2.isf(1e-6, 8)

function poissonPmf(mu: number, n: number): number[] {
  const out = [Math.exp(-mu)];
  for (let k = 1; k < n; k++) out.push(out[k - 1]! * mu / k);
  return out;
}

/** P(Sk(mu) = k) = sum_j Pois(j + |k|) Pois(j). */
function skellamPmf(mu: number, k: number): number {
  const p = poissonPmf(mu, 80);
  let s = 0;
  for (let j = 0; j + Math.abs(k) < 80; j++) s += p[j + Math.abs(k)]! * p[j]!;
  return s;
}

function chiSquare(samples: ArrayLike<number>, mu: number): number {
  const counts = new Array<number>(BINS.length).fill(0);
  for (let i = 0; i < samples.length; i++) {
    const x = Math.max(BINS[0]!, Math.min(BINS[BINS.length - 1]!, samples[i]!));
    counts[x - BINS[0]!]! += 1;
  }
  const probs = BINS.map((b) => skellamPmf(mu, b));
  let tail = 0;
  for (let k = 5; k < 60; k++) tail += skellamPmf(mu, k);
  probs[0]! += tail;
  probs[probs.length - 1]! += tail;
  let chi = 0;
  counts.forEach((c, i) => {
    const e = probs[i]! * samples.length;
    chi += (c - e) ** 2 / e;
  });
  return chi;
}

test("dp-pop's noise (where the user has no item) fits Sk(mu_share): chi-square, p = 1e-6", () => {
  const py = JSON.parse(readFileSync(new URL("prio3_dp_pop_1682.json", PY), "utf8"));
  const round: DpPopRound = { nItems: py.dimension, sampling: "uniform", muShare: MU, terms: py.terms };
  const history = { items: Array.from({ length: 60 }, (_, i) => i) };
  const rng = new SecureSource();
  const samples: number[] = [];
  for (let r = 0; r < 60; r++) {
    const y = dpPopVector(round, history, rng);
    for (let j = 60; j < y.length; j++) samples.push(y[j]!);
  }
  const chi = chiSquare(samples, MU);
  assert.ok(chi < CHI2_8DOF_1E6, `chi-square ${chi.toFixed(1)} over ${samples.length} draws`);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  assert.ok(Math.abs(mean) < 6 * Math.sqrt(2 * MU / samples.length), `mean ${mean}`);
});

test("the same test refuses a share of 20% more variance (it can fail)", () => {
  const z = skellamShare(100_000, MU * 1.2, new SecureSource());
  assert.ok(chiSquare(z, MU) > CHI2_8DOF_1E6);
});
