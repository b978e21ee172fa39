/** Field64's 32-bit-limb arithmetic against BigInt on edge cases and pseudo-random pairs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as F from "../src/prio3/field64.js";
import { intt, ntt } from "../src/prio3/ntt.js";

const P = F.P;
const EDGES = [0n, 1n, 2n, P - 1n, P - 2n, 0xffffffffn, 0x100000000n, P - 0x100000000n,
  0xfffffffe00000001n, 0x7fffffffffffffffn, 0x8000000000000000n, 12345678901234567n];

function pairs(): [bigint, bigint][] {
  const out: [bigint, bigint][] = [];
  for (const a of EDGES) for (const b of EDGES) out.push([a, b]);
  let s = 88172645463325252n;
  for (let i = 0; i < 5000; i++) {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    const a = s % P;
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    out.push([a, s % P]);
  }
  return out;
}

test("add, sub, mul equal BigInt's mod p", () => {
  const ps = pairs();
  const a = F.fromInts(ps.map((x) => x[0])), b = F.fromInts(ps.map((x) => x[1]));
  const sum = F.add(a, b), diff = F.sub(a, b), prod = F.mul(a, b);
  ps.forEach(([x, y], i) => {
    assert.equal(F.get(sum, i), (x + y) % P, `add ${x} ${y}`);
    assert.equal(F.get(diff, i), ((x - y) % P + P) % P, `sub ${x} ${y}`);
    assert.equal(F.get(prod, i), (x * y) % P, `mul ${x} ${y}`);
  });
});

test("encode/decode round trip; an element >= p is refused", () => {
  const v = F.fromInts(EDGES);
  assert.deepEqual(F.toBigInts(F.decode(F.encode(v))), EDGES.map((x) => x % P));
  const bad = new Uint8Array(8).fill(0xff);
  assert.throws(() => F.decode(bad), /not a field element/);
  assert.throws(() => F.decode(new Uint8Array(7)), /multiple of 8/);
});

test("roots of unity and the NTT: intt(ntt(c)) = c, ntt of x is the roots", () => {
  assert.equal(F.powB(F.root(8), 8n), 1n);
  assert.notEqual(F.powB(F.root(8), 4n), 1n);
  const c = F.fromInts([3, 1, 4, 1, 5, 9, 2, 6]);
  assert.deepEqual(F.toBigInts(intt(ntt(c, 8))), F.toBigInts(c));
  const x = ntt(F.fromInts([0, 1]), 4); // f(t) = t at w_4^i
  assert.deepEqual(F.toBigInts(x), [0, 1, 2, 3].map((i) => F.powB(F.root(4), BigInt(i))));
});

test("mulSmallTo equals BigInt's a c mod p for c < 2^20", () => {
  const ps = pairs();
  const out = F.zeros(1);
  for (const [a] of ps) {
    for (const c of [0, 1, 2, 3, 255, 65535, 65536, 1048575]) {
      const v = F.fromInts([a]);
      F.mulSmallTo(out, 0, v[0]!, v[1]!, c);
      assert.equal(F.get(out, 0), (a * BigInt(c)) % P, `${a} * ${c}`);
    }
  }
});
