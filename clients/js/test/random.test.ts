import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SecureSource, logGamma } from "../src/random.js";

/** Pearson's statistic of `counts` against `expected` counts. */
function chiSquare(counts: number[], expected: number[]): number {
  return counts.reduce((s, c, i) => s + (c - (expected[i] as number)) ** 2 / (expected[i] as number), 0);
}

/** A source reading `bytes`, then zeros: a known stream for known answers. */
function known(bytes: number[]): SecureSource {
  let at = 0;
  return new SecureSource((buf) => {
    buf.fill(0);
    for (let i = 0; i < buf.length && at < bytes.length; i++) buf[i] = bytes[at++] as number;
  });
}

test("int(n) is uniform: chi-square over 7 values (df 6, refused above 40: p < 1e-6)", () => {
  const rng = new SecureSource();
  const counts = new Array<number>(7).fill(0);
  const draws = 70_000;
  for (let i = 0; i < draws; i++) (counts[rng.int(7)] as number)++;
  assert.ok(chiSquare(counts, new Array(7).fill(draws / 7)) < 40);
});

test("int(n) has no modulo bias at n = 3 * 2^30, where x mod n would double the first third", () => {
  const n = 3 * 2 ** 30;
  const rng = new SecureSource();
  const draws = 30_000;
  const ours = [0, 0, 0];
  const modulo = [0, 0, 0];
  for (let i = 0; i < draws; i++) {
    (ours[Math.floor(rng.int(n) / 2 ** 30)] as number)++;
    (modulo[Math.floor((rng.uint32() % n) / 2 ** 30)] as number)++;
  }
  const expected = [draws / 3, draws / 3, draws / 3];
  assert.ok(chiSquare(ours, expected) < 30, `rejection sampling: ${ours}`);
  assert.ok(chiSquare(modulo, expected) > 30, `the test must catch x mod n: ${modulo}`);
});

test("int(n) rejects a value >= n and draws again (known byte stream)", () => {
  // n = 3 takes the top 2 bits of a word: 0xC0... is 3 (rejected), 0x80... is 2.
  assert.equal(known([0xc0, 0, 0, 0, 0x80, 0, 0, 0]).int(3), 2);
  assert.equal(known([0x40, 0, 0, 0]).int(3), 1);
  assert.equal(known([0xff, 0xff, 0xff, 0xff]).int(2 ** 32), 2 ** 32 - 1);
  assert.throws(() => known([]).int(0), /int\(n\)/);
  assert.throws(() => known([]).int(1.5), /int\(n\)/);
});

test("float() is 53 random bits over 2^53, in [0, 1)", () => {
  assert.equal(known([0, 0, 0, 0, 0, 0, 0, 0]).float(), 0);
  const top = known([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).float();
  assert.equal(top, (2 ** 53 - 1) / 2 ** 53);
  assert.ok(top < 1);
  assert.equal(known([0x80, 0, 0, 0, 0, 0, 0, 0]).float(), 0.5);
});

test("bernoulli(p) hits its rate within 6 standard deviations; 0 and 1 are certain", () => {
  const rng = new SecureSource();
  const draws = 100_000;
  for (const p of [0.3, 0.731058578630005, 0.02]) {
    let ones = 0;
    for (let i = 0; i < draws; i++) ones += rng.bernoulli(p) ? 1 : 0;
    assert.ok(Math.abs(ones / draws - p) < 6 * Math.sqrt(p * (1 - p) / draws), `p=${p}: ${ones}`);
  }
  assert.equal(rng.bernoulli(0), false);
  assert.equal(rng.bernoulli(1), true);
  assert.throws(() => rng.bernoulli(1.5), /probability/);
  assert.throws(() => rng.bernoulli(Number.NaN), /probability/);
});

test("poisson(12) (PTRS) matches the Poisson pmf: chi-square over 21 cells below 60", () => {
  const rng = new SecureSource();
  const lambda = 12;
  const draws = 50_000;
  const cells = new Array<number>(21).fill(0); // <= 4, 5..23 one each, >= 24
  const cell = (k: number) => (k <= 4 ? 0 : k >= 24 ? 20 : k - 4);
  for (let i = 0; i < draws; i++) (cells[cell(rng.poisson(lambda))] as number)++;
  const pmf = (k: number) => Math.exp(-lambda + k * Math.log(lambda) - logGamma(k + 1));
  const expected = new Array<number>(21).fill(0);
  for (let k = 0; k < 200; k++) (expected[cell(k)] as number) += pmf(k) * draws;
  assert.ok(chiSquare(cells, expected) < 60, `${cells}`);
});

test("poisson and skellam have their means and variances (small and large lambda)", () => {
  const rng = new SecureSource();
  const draws = 20_000;
  const moments = (draw: () => number) => {
    let s = 0;
    let s2 = 0;
    for (let i = 0; i < draws; i++) {
      const x = draw();
      s += x;
      s2 += x * x;
    }
    const mean = s / draws;
    return [mean, s2 / draws - mean * mean] as const;
  };
  for (const lambda of [0.5, 3, 1000]) {
    const [mean, variance] = moments(() => rng.poisson(lambda));
    assert.ok(Math.abs(mean - lambda) < 6 * Math.sqrt(lambda / draws), `lambda ${lambda}: ${mean}`);
    assert.ok(Math.abs(variance / lambda - 1) < 0.08, `lambda ${lambda}: var ${variance}`);
  }
  const [mean, variance] = moments(() => rng.skellam(50));
  assert.ok(Math.abs(mean) < 6 * Math.sqrt(50 / draws), `skellam mean ${mean}`);
  assert.ok(Math.abs(variance / 50 - 1) < 0.08, `skellam var ${variance}`);
  assert.equal(rng.poisson(0), 0);
  assert.throws(() => rng.skellam(-1), /Skellam/);
});

test("logGamma matches known values", () => {
  assert.ok(Math.abs(logGamma(5) - Math.log(24)) < 1e-12);
  assert.ok(Math.abs(logGamma(0.5) - 0.5 * Math.log(Math.PI)) < 1e-12);
  assert.ok(Math.abs(logGamma(100) - 359.1342053695754) < 1e-10);
});

test("sample(n, k) draws distinct values, uniformly placed", () => {
  const rng = new SecureSource();
  const perm = rng.sample(10, 10);
  assert.deepEqual([...perm].sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const first = new Array<number>(5).fill(0);
  const draws = 25_000;
  for (let i = 0; i < draws; i++) {
    const s = rng.sample(5, 2);
    assert.notEqual(s[0], s[1]);
    (first[s[0] as number] as number)++;
  }
  assert.ok(chiSquare(first, new Array(5).fill(draws / 5)) < 35, `${first}`);
  assert.throws(() => rng.sample(3, 4), /k must be/);
});

test("bytes() are fresh: every byte of the pool is used once", () => {
  let calls = 0;
  const rng = new SecureSource((buf) => { calls += 1; buf.fill(calls); });
  const a = rng.bytes(4096);
  const b = rng.bytes(10);
  assert.ok(a.every((x) => x === 1));
  assert.ok(b.every((x) => x === 2));
});

test("the SDK's sources never call Math.random", () => {
  const src = fileURLToPath(new URL("../../src", import.meta.url));
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".ts") ? [p] : [];
  });
  const files = walk(src);
  assert.ok(files.length > 5);
  for (const f of files) assert.ok(!/Math\.random\s*\(/.test(readFileSync(f, "utf8")), f);
});
