/** The device steps' distributions (tests that can fail: binomial / chi-square bounds at
 * 5 sigma on a seeded source, and the known answers of the mechanisms' formulas). */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DprecError, assignedCells, bitFlip, checkHistory, decodeGradientReports,
  decodeObfuscatedBits, decodeValueReports, dplcfStep, fmfStep, obfuscate, parseCellsToken,
  piecewiseValues, binaryBits, roundSeed, SecureSource, unpackBits, userVector,
} from "../src/index.js";
import { SeededSource, withinBinomial } from "./seeded_source.js";

test("bit flip probabilities are Python's (symmetric, asymmetric, oue) and refuse bad eps", () => {
  const s = bitFlip("symmetric", 1);
  assert.equal(s.p, 1 / (1 + Math.exp(-1)));
  assert.equal(s.q, 1 - s.p);
  assert.deepEqual([bitFlip("asymmetric", 2).p, bitFlip("asymmetric", 2).q], [1, Math.exp(-2)]);
  assert.equal(bitFlip("oue", 1).q, 1 / (Math.E + 1));
  for (const eps of [0, -1, NaN, Infinity, 1e-13, 37]) {
    assert.throws(() => bitFlip("symmetric", eps), DprecError, String(eps));
  }
  assert.throws(() => bitFlip("none" as "oue", 1), DprecError);
});

test("the symmetric flip keeps a 1 with probability p and raises a 0 with q (binomial, 5 sd)",
  () => {
    const src = new SeededSource("flip");
    for (const eps of [0.5, 1, 3]) {
      const m = bitFlip("symmetric", eps);
      const n = 40000;
      const held = Array.from({ length: n / 2 }, (_, j) => 2 * j); // even items held
      const bits = obfuscate(held, n, m, src);
      let ones1 = 0;
      let ones0 = 0;
      for (let i = 0; i < n; i++) (i % 2 ? (ones0 += bits[i]!) : (ones1 += bits[i]!));
      assert.ok(withinBinomial(ones1, n / 2, m.p), `eps ${eps}: ${ones1} of ${n / 2}, p ${m.p}`);
      assert.ok(withinBinomial(ones0, n / 2, m.q), `eps ${eps}: ${ones0} of ${n / 2}, q ${m.q}`);
      // Power: at these n the wrong rate (eps + 0.25) falls outside the bound.
      const wrong = bitFlip("symmetric", eps + 0.25);
      assert.ok(!withinBinomial(ones1, n / 2, wrong.p), "the test can tell eps from eps + 0.25");
    }
  });

test("the dplcf-sp step is one ObfuscatedBits row of N bits with the flip's rates", () => {
  const n = 5003;
  const held = Array.from({ length: 1000 }, (_, j) => (j * 7) % n);
  const body = dplcfStep({ nItems: n, mechanism: "symmetric", epsilon: 2 },
    { items: held }, new SeededSource("dplcf"));
  const m = decodeObfuscatedBits(body);
  assert.equal(m.clients, 1);
  assert.equal(m.nItems, n);
  assert.equal(body.length, 6 + 8 + Math.ceil(n / 8));
  const bits = unpackBits("row", m.packed, n);
  const p = bitFlip("symmetric", 2).p;
  const kept = held.reduce((s, i) => s + bits[i]!, 0);
  const raised = bits.reduce((s, b) => s + b, 0) - kept;
  assert.ok(withinBinomial(kept, 1000, p), `kept ${kept}`);
  assert.ok(withinBinomial(raised, n - 1000, 1 - p), `raised ${raised}`);
  assert.throws(() => dplcfStep({ nItems: n, mechanism: "symmetric", epsilon: 2 },
    { items: [n] }, new SeededSource("x")), DprecError);
  assert.throws(() => dplcfStep({ nItems: n, mechanism: "symmetric", epsilon: 2 },
    { items: [3, 3] }, new SeededSource("x")), DprecError);
});

test("a history is checked: range, duplicates, values > 0 and finite, sorted", () => {
  const h = checkHistory({ items: [5, 1, 3], values: [2, 4, 1] }, 6);
  assert.deepEqual(Array.from(h.items), [1, 3, 5]);
  assert.deepEqual(Array.from(h.values), [4, 1, 2]);
  for (const bad of [{ items: [1.5] }, { items: [-1] }, { items: [1], values: [0] },
    { items: [1], values: [NaN] }, { items: [1, 2], values: [1] }]) {
    assert.throws(() => checkHistory(bad, 6), DprecError, JSON.stringify(bad));
  }
});

test("binary reports: P(1 | x) = (1 + x tanh(eps/2))/2 at several x (binomial, 5 sd)", () => {
  const src = new SeededSource("binary");
  const eps = 1.5;
  const n = 20000;
  for (const x of [-1, -0.3, 0, 0.8, 1]) {
    const bits = binaryBits(new Float64Array(n).fill(x), eps, src);
    const ones = bits.reduce((s, b) => s + b, 0);
    assert.ok(withinBinomial(ones, n, 0.5 * (1 + x * Math.tanh(eps / 2))), `x ${x}: ${ones}`);
  }
});

test("piecewise reports lie in [-C, C], are unbiased, and land in [l(x), r(x)] w.p. s/(s+1)",
  () => {
    const src = new SeededSource("piecewise");
    const eps = 2;
    const c = 1 + 2 / Math.expm1(eps / 2);
    const n = 40000;
    for (const x of [-0.9, 0, 0.5]) {
      const t = piecewiseValues(new Float64Array(n).fill(x), eps, src);
      const half = (c - 1) / 2;
      const [l, r] = [x + half * (x - 1), x + half * (x + 1)];
      let inside = 0;
      let sum = 0;
      for (const v of t) {
        assert.ok(v >= -c && v <= c, `${v} outside [-${c}, ${c}]`);
        if (v >= l && v <= r) inside++;
        sum += v;
      }
      const s = Math.exp(eps / 2);
      assert.ok(withinBinomial(inside, n, s / (s + 1)), `x ${x}: ${inside} inside`);
      const variance = (x * x) / (s - 1) + (s + 3) / (3 * (s - 1) ** 2);
      assert.ok(Math.abs(sum / n - x) <= 5 * Math.sqrt(variance / n), `x ${x}: mean ${sum / n}`);
    }
  });

// Seeded: the 1 - 1e-4 quantile (33.7); the CSPRNG, drawn afresh each run: 1 - 1e-8 (55.4).
test("integers(n) is uniform (chi-square, 9 dof)", () => {
  for (const [src, bound] of [[new SeededSource("ints"), 33.7], [new SecureSource(), 55.4]] as const) {
    const counts = new Array<number>(10).fill(0);
    const n = 50000;
    for (let j = 0; j < n; j++) counts[src.integers(10)]!++;
    const chi2 = counts.reduce((s, c) => s + (c - n / 10) ** 2 / (n / 10), 0);
    assert.ok(chi2 < bound, `chi2 ${chi2} for ${counts}`);
  }
  const u = new SecureSource().uniform();
  assert.ok(u >= 0 && u < 1);
});

const V = Float64Array.from({ length: 7 * 3 }, (_, j) => Math.sin(j + 1) * 0.3);

test("the user vector solves the normal equations of Eq. 4", () => {
  const h = checkHistory({ items: [0, 4], values: [3, 1] }, 7);
  const x = userVector(V, 3, h, 2, 0.1);
  // residual of (V^T V + sum alpha r v v^T + reg I) x = sum (1 + alpha r) v
  for (let a = 0; a < 3; a++) {
    let lhs = 0.1 * x[a]!;
    let rhs = 0;
    for (let i = 0; i < 7; i++) {
      const r = i === 0 ? 3 : i === 4 ? 1 : 0;
      let vx = 0;
      for (let b = 0; b < 3; b++) vx += V[i * 3 + b]! * x[b]!;
      lhs += (1 + 2 * r) * V[i * 3 + a]! * vx;
      if (r > 0) rhs += (1 + 2 * r) * V[i * 3 + a]!;
    }
    assert.ok(Math.abs(lhs - rhs) < 1e-12, `row ${a}: ${lhs} vs ${rhs}`);
  }
});

test("fmf-ldp chosen cells are uniform over items and factors; k reports of the right kind",
  () => {
    const terms = { nItems: 7, factors: 3, k: 2100, alpha: 1, regularization: 0.1, clip: 1,
      mechanism: "binary" as const, epsilon: 2, cells: "chosen" as const };
    const body = fmfStep(terms, { items: [1, 2] }, { rows: 7, cols: 3, matrix: V }, 42n,
      new SeededSource("fmf"));
    const m = decodeGradientReports(body);
    assert.equal(m.clientId, 42n);
    assert.equal(m.items.length, 2100);
    const items = new Array<number>(7).fill(0);
    const factors = new Array<number>(3).fill(0);
    m.items.forEach((i) => items[i]!++);
    m.factors.forEach((f) => factors[f]!++);
    const chi = (c: number[]) => c.reduce((s, o) => s + (o - 2100 / c.length) ** 2 / (2100 / c.length), 0);
    assert.ok(chi(items) < 27.9, `items ${items}`); // 6 dof, 0.9999 quantile
    assert.ok(chi(factors) < 18.5, `factors ${factors}`); // 2 dof
    const pw = fmfStep({ ...terms, mechanism: "piecewise" }, { items: [1] },
      { rows: 7, cols: 3, matrix: Float32Array.from(V) }, -1, new SeededSource("pw"));
    const c = 1 + 2 / Math.expm1(1);
    const values = decodeValueReports(pw).values;
    assert.ok(values.every((v) => Math.abs(v) <= c * (1 + 1e-6)));
    assert.throws(() => fmfStep({ ...terms, mechanism: "none" as "binary" }, { items: [1] },
      { rows: 7, cols: 3, matrix: V }, 1, new SeededSource("x")), DprecError);
    assert.throws(() => fmfStep(terms, { items: [1] }, { rows: 6, cols: 3, matrix: V.subarray(3) },
      1, new SeededSource("x")), DprecError);
    const bad = V.slice();
    bad[4] = NaN;
    assert.throws(() => fmfStep(terms, { items: [1] }, { rows: 7, cols: 3, matrix: bad }, 1,
      new SeededSource("x")), DprecError);
  });

test("assigned cells: a fixed answer, uniform law, and refusals", () => {
  const token = parseCellsToken("ab".repeat(32));
  const seed = roundSeed(V, 7, 3);
  const a = assignedCells(seed, token, 5, 7, 3);
  assert.deepEqual(assignedCells(seed, token, 5, 7, 3), a);
  const big = assignedCells(seed, token, 21000, 7, 3);
  const counts = new Array<number>(21).fill(0);
  big.items.forEach((i, j) => counts[i * 3 + big.factors[j]!]!++);
  const chi2 = counts.reduce((s, c) => s + (c - 1000) ** 2 / 1000, 0);
  assert.ok(chi2 < 52.4, `chi2 ${chi2}`); // 20 dof, 0.9999 quantile
  assert.throws(() => parseCellsToken("ab".repeat(31)), DprecError);
  assert.throws(() => parseCellsToken("zz".repeat(32)), DprecError);
  const terms = { nItems: 7, factors: 3, k: 5, alpha: 1, regularization: 0.1, clip: 1,
    mechanism: "binary" as const, epsilon: 2, cells: "assigned" as const, cellsToken: token };
  const m = decodeGradientReports(fmfStep(terms, { items: [1] }, { rows: 7, cols: 3, matrix: V },
    3, new SeededSource("x")));
  assert.deepEqual(m.items, a.items);
  assert.deepEqual(m.factors, a.factors);
  assert.throws(() => fmfStep(terms, { items: [1] },
    { rows: 7, cols: 3, matrix: Float32Array.from(V) }, 3, new SeededSource("x")), DprecError);
});
