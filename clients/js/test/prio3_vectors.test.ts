/** Sharding against the published test vectors of draft-irtf-cfrg-vdaf-20 (the Python
 * tests' copy, tests/protocol/secure_sum/vdaf_vectors): XofTurboShake128 and the Field64
 * instances Prio3Count, Prio3Sum, the degree-3 test circuit and
 * Prio3SumVecWithMultiproof (3 proofs, joint randomness), 2 and 3 aggregators. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as F from "../src/prio3/field64.js";
import { Count, PolyEvalCircuit, Sum, SumVec } from "../src/prio3/circuits.js";
import { Prio3 } from "../src/prio3/prio3.js";
import { XofTurboShake128 } from "../src/prio3/xof.js";
import {
  encodeVerifierShare, verifierSharesToMessage, verifyInit, verifyNext, type VerifierShare,
} from "../src/prio3/verify.js";
import type { HelperShare, LeaderShare } from "../src/prio3/prio3.js";

const VECTORS = new URL("../../../../tests/protocol/secure_sum/vdaf_vectors/", import.meta.url);
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, "hex"));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function load(name: string): any {
  return JSON.parse(readFileSync(new URL(name, VECTORS), "utf8"));
}

test("XofTurboShake128 matches the draft's vector", () => {
  const tv = load("XofTurboShake128.json");
  const seed = bytes(tv.seed), dst = bytes(tv.dst), binder = bytes(tv.binder);
  assert.equal(hex(XofTurboShake128.deriveSeed(seed, dst, binder)), tv.derived_seed);
  // Field128's rejection never fires here (p128 > 2^128 - 2^66): the vector is the stream
  const stream = new XofTurboShake128(seed, dst, binder);
  assert.equal(hex(stream.next(16 * tv.length)), tv.expanded_vec_field128);
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function check(vdaf: Prio3, tv: any, encode: (m: any) => F.Vec): void {
  const ctx = bytes(tv.ctx);
  for (const r of tv.reports) {
    const out = vdaf.shardEncoded(ctx, encode(r.measurement), bytes(r.nonce), bytes(r.rand));
    assert.equal(hex(vdaf.encodePublicShare(out.publicShare)), r.public_share);
    assert.equal(hex(vdaf.encodeLeaderShare(out.leader)), r.input_shares[0]);
    out.helpers.forEach((h, j) => assert.equal(hex(vdaf.encodeHelperShare(h)), r.input_shares[j + 1]));
  }
  prepare(vdaf, tv);
}

/** The vector's input shares as the aggregators decode them. */
function decodeShares(vdaf: Prio3, shares: string[]): [LeaderShare, ...HelperShare[]] {
  const jr = vdaf.usesJointRand, lead = bytes(shares[0]!);
  const cut = F.ENCODED_SIZE * vdaf.circuit.measLen;
  const end = cut + F.ENCODED_SIZE * vdaf.flp.proofLen * vdaf.proofs;
  const leader = { measurement: F.decode(lead.subarray(0, cut)), proofs: F.decode(lead.subarray(cut, end)),
    blind: jr ? lead.slice(end) : null };
  const helpers = shares.slice(1).map((h) => ({ seed: bytes(h).slice(0, 32), blind: jr ? bytes(h).slice(32) : null }));
  return [leader, ...helpers];
}

/** Replay each report's preparation: verifier shares, message and output shares byte for
 * byte, and a refusal exactly where the vector records one. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function prepare(vdaf: Prio3, tv: any): void {
  const ctx = bytes(tv.ctx), key = bytes(tv.verify_key);
  tv.reports.forEach((r: any, index: number) => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const ops = tv.operations.filter((o: any) => o.report_index === index); // eslint-disable-line @typescript-eslint/no-explicit-any
    const refuses = ops.some((o: any) => !o.success); // eslint-disable-line @typescript-eslint/no-explicit-any
    const pub = vdaf.usesJointRand ? Array.from({ length: vdaf.shares }, (_, j) =>
      bytes(r.public_share).slice(32 * j, 32 * (j + 1))) : null;
    const shares = decodeShares(vdaf, r.input_shares);
    const states = [], vs: VerifierShare[] = [];
    for (let j = 0; j < vdaf.shares; j++) {
      const [state, share] = verifyInit(vdaf, key, ctx, j, bytes(r.nonce), pub, shares[j]!);
      states.push(state);
      vs.push(share);
      assert.equal(hex(encodeVerifierShare(share)), r.verifier_shares[0][j], `verifier share ${j}`);
    }
    let message: Uint8Array | null;
    try {
      message = verifierSharesToMessage(vdaf, ctx, vs);
    } catch (e) {
      assert.ok(refuses, `report ${index} refused: ${String(e)}`);
      return;
    }
    assert.equal(hex(message ?? new Uint8Array(0)), r.verifier_messages[0]);
    states.forEach((st, j) => {
      if (refuses) {
        assert.throws(() => verifyNext(st, message));
      } else {
        assert.equal(hex(F.encode(verifyNext(st, message))), r.out_shares[j]);
      }
    });
  });
}

for (const name of ["Prio3Count_bad_gadget_poly", "Prio3Count_bad_helper_seed",
  "Prio3Count_bad_meas_share", "Prio3Count_bad_wire_seed"]) {
  test(`${name}: refused where the vector refuses`, () => {
    const tv = load(`${name}.json`);
    prepare(new Prio3(new Count(), 1, 1, tv.shares), tv);
  });
}

for (const name of ["Prio3Count_0", "Prio3Count_1", "Prio3Count_2"]) {
  test(`${name}: shares, verifier shares and output shares byte for byte`, () => {
    const tv = load(`${name}.json`);
    const c = new Count();
    check(new Prio3(c, 1, 1, tv.shares), tv, (m) => c.encode(m));
  });
}

for (const name of ["Prio3Sum_0", "Prio3Sum_1", "Prio3Sum_2"]) {
  test(`${name}: shares, verifier shares and output shares byte for byte`, () => {
    const tv = load(`${name}.json`);
    const c = new Sum(tv.max_measurement);
    check(new Prio3(c, 1, 2, tv.shares), tv, (m) => c.encode(m));
  });
}

test("Prio3HigherDegree_0 (a degree-3 PolyEval): shares and preparation byte for byte", () => {
  const tv = load("Prio3HigherDegree_0.json");
  const c = new PolyEvalCircuit(1, [0, 2, -3, 1]);
  check(new Prio3(c, 1, 0xffffffff, tv.shares), tv, (m) => F.fromInts([m]));
});

for (const name of ["Prio3SumVecWithMultiproof_0", "Prio3SumVecWithMultiproof_1"]) {
  test(`${name} (Field64, 3 proofs, joint randomness): shares and preparation byte for byte`, () => {
    const tv = load(`${name}.json`);
    const c = new SumVec(tv.length, tv.max_measurement, tv.chunk_length);
    check(new Prio3(c, 3, 0xffffffff, tv.shares), tv, (m) => c.encode(m));
  });
}

test("a changed measurement changes the shares (the check can fail)", () => {
  const tv = load("Prio3Count_0.json");
  const c = new Count();
  const vdaf = new Prio3(c, 1, 1, 2);
  const r = tv.reports[0];
  const out = vdaf.shardEncoded(bytes(tv.ctx), c.encode(1 - r.measurement), bytes(r.nonce), bytes(r.rand));
  assert.notEqual(hex(vdaf.encodeLeaderShare(out.leader)), r.input_shares[0]);
});
