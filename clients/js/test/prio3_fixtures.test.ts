/** dp-pop's check against Python's fixtures (scripts/write_prio3_fixtures.py): for a fixed
 * noised vector, nonce and randomness, the same circuit layout, public share, input shares
 * and proofs, byte for byte (a SHA-256 where the fixture stores one). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { sha256 } from "@noble/hashes/sha2.js";
import * as F from "../src/prio3/field64.js";
import { dpPopCheck } from "../src/prio3/contribution.js";
import type { ParallelSum } from "../src/prio3/gadgets.js";
import { InvalidProofError } from "../src/prio3/errors.js";
import { moduleBytes, setWasmEnabled, wasmKernel } from "../src/prio3/wasm64.js";
import { encodeVerifierShare, verifierSharesToMessage, verifyInit, verifyNext } from "../src/prio3/verify.js";

const DIR = new URL("../../fixtures/python/", import.meta.url);
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, "hex"));

function same(got: Uint8Array, want: { hex?: string; sha256?: string }, what: string): void {
  if (want.hex !== undefined) assert.equal(hex(got), want.hex, what);
  else assert.equal(hex(sha256(got)), want.sha256, what);
}

for (const name of ["small", "bits", "1682"]) {
  test(`prio3_dp_pop_${name}.json: layout, shares and proofs byte for byte`, () => {
    const fx = JSON.parse(readFileSync(new URL(`prio3_dp_pop_${name}.json`, DIR), "utf8"));
    const check = dpPopCheck(fx.dimension, fx.terms);
    const c = check.circuit, v = check.vdaf;
    assert.deepEqual([c.low, c.high, c.rangeProof, c.measLen, v.flp.proofLen],
      [fx.circuit.low, fx.circuit.high, fx.circuit.range_proof, fx.circuit.meas_len, fx.circuit.proof_len]);
    assert.deepEqual(c.gadgetCalls, fx.circuit.gadget_calls);
    assert.deepEqual(c.gadgets.map((g) => (g as ParallelSum).count), fx.circuit.chunks);
    assert.equal(hex(check.ctx), fx.ctx);
    const nonce = bytes(fx.nonce), rand = bytes(fx.rand);
    const rep = check.shard(fx.y, nonce, rand);
    assert.equal(hex(rep.publicShare), fx.public_share);
    assert.equal(hex(rep.helperShare), fx.helper_share);
    same(rep.leaderShare, fx.leader_share, "leader share");
    // the whole proofs: the leader's share plus the helper's expanded share
    const measBytes = F.ENCODED_SIZE * c.measLen;
    const leaderProofs = F.decode(rep.leaderShare.subarray(measBytes, rep.leaderShare.length - 32));
    const helper = v.helperProofsShare(check.ctx, 1, rep.helperShare.subarray(0, 32));
    same(F.encode(F.add(leaderProofs, helper)), fx.proofs, "proofs");
  });
}

test("a vector outside the check is refused before anything is proved", () => {
  const fx = JSON.parse(readFileSync(new URL("prio3_dp_pop_small.json", DIR), "utf8"));
  const check = dpPopCheck(fx.dimension, fx.terms);
  const y = fx.y.slice();
  y[0] = fx.circuit.high + 1;
  assert.throws(() => check.shard(y, bytes(fx.nonce), bytes(fx.rand)), /breaks the dp-pop check \(range\)/);
  assert.throws(() => dpPopCheck(fx.dimension, { ...fx.terms, proofs: 2 }), /proofs/);
});

test("preparation of the small and bits fixtures: Python's verifier shares and message; a tampered proof refused", () => {
  for (const name of ["small", "bits"]) {
    const fx = JSON.parse(readFileSync(new URL(`prio3_dp_pop_${name}.json`, DIR), "utf8"));
    const check = dpPopCheck(fx.dimension, fx.terms);
    const v = check.vdaf, c = check.circuit;
    const rep = check.shard(fx.y, bytes(fx.nonce), bytes(fx.rand));
    const pub = [rep.publicShare.slice(0, 32), rep.publicShare.slice(32)];
    const cut = F.ENCODED_SIZE * c.measLen, end = rep.leaderShare.length - 32;
    const leader = { measurement: F.decode(rep.leaderShare.subarray(0, cut)),
      proofs: F.decode(rep.leaderShare.subarray(cut, end)), blind: rep.leaderShare.slice(end) };
    const helper = { seed: rep.helperShare.slice(0, 32), blind: rep.helperShare.slice(32) };
    const run = (lead: typeof leader): Uint8Array | null => {
      const [s0, vs0] = verifyInit(v, bytes(fx.verify_key), check.ctx, 0, bytes(fx.nonce), pub, lead);
      const [s1, vs1] = verifyInit(v, bytes(fx.verify_key), check.ctx, 1, bytes(fx.nonce), pub, helper);
      same(encodeVerifierShare(vs0), fx.verifier_shares[0], "leader's verifier share");
      same(encodeVerifierShare(vs1), fx.verifier_shares[1], "helper's verifier share");
      const message = verifierSharesToMessage(v, check.ctx, [vs0, vs1]);
      const sum = F.add(verifyNext(s0, message), verifyNext(s1, message));
      const low = c.rangeProof === "bits" ? BigInt(c.low) : 0n;
      assert.deepEqual(F.toBigInts(sum).map((x) => F.centred(x) + low), fx.y.map(BigInt));
      return message;
    };
    assert.equal(hex(run(leader)!), fx.verifier_message);
    const bad = leader.proofs.slice();
    bad[2 * 3] = (bad[2 * 3]! + 1) | 0; // one proof element (the seeds' 4th) off by one
    assert.throws(() => {
      const [, vs0] = verifyInit(v, bytes(fx.verify_key), check.ctx, 0, bytes(fx.nonce), pub, { ...leader, proofs: bad });
      const [, vs1] = verifyInit(v, bytes(fx.verify_key), check.ctx, 1, bytes(fx.nonce), pub, helper);
      verifierSharesToMessage(v, check.ctx, [vs0, vs1]);
    }, InvalidProofError);
  }
});

test("without WebAssembly (the JavaScript arithmetic) the same shares and proofs", () => {
  assert.ok(wasmKernel() !== null, "Node runs the WebAssembly kernel");
  assert.ok(moduleBytes().length < 4096, "small enough to compile synchronously in a browser");
  setWasmEnabled(false);
  try {
    assert.equal(wasmKernel(), null);
    for (const name of ["small", "1682"]) {
      const fx = JSON.parse(readFileSync(new URL(`prio3_dp_pop_${name}.json`, DIR), "utf8"));
      const rep = dpPopCheck(fx.dimension, fx.terms).shard(fx.y, bytes(fx.nonce), bytes(fx.rand));
      same(rep.leaderShare, fx.leader_share, `${name}: leader share, JavaScript path`);
      assert.equal(hex(rep.publicShare), fx.public_share);
    }
  } finally {
    setWasmEnabled(true);
  }
  assert.ok(wasmKernel() !== null);
});

test("prio3_layouts.json: ten dp-pop checks laid out as Python lays them out", () => {
  const fx = JSON.parse(readFileSync(new URL("prio3_layouts.json", DIR), "utf8"));
  for (const row of fx.layouts) {
    const check = dpPopCheck(row.dimension, row.terms);
    const c = check.circuit, v = check.vdaf;
    const got = { range_proof: c.rangeProof, meas_len: c.measLen, proof_len: v.flp.proofLen,
      joint_rand_len: c.jointRandLen, gadget_calls: c.gadgetCalls,
      chunks: c.gadgets.map((g) => (g as ParallelSum).count), degrees: c.gadgets.map((g) => g.degree),
      leader_share: check.sizes().leaderShare };
    const { dimension: _d, terms: _t, ...want } = row;
    assert.deepEqual(got, want, `d = ${row.dimension}, terms ${JSON.stringify(row.terms)}`);
  }
});
