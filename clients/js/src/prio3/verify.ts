/**
 * Prio3 preparation (draft-irtf-cfrg-vdaf-20 §7.2.2; Python: vdaf.prio3.Prio3.verify_init,
 * verifier_shares_to_message, verify_next): each aggregator's verifier share from its input
 * share, the verifier message (the joint-randomness seed both must have used) or a refusal,
 * and the output share. For tests and self-checks: the aggregators are Python's.
 */
import { InvalidProofError } from "./errors.js";
import * as F from "./field64.js";
import { decide, query, type VerifiableCircuit } from "./flp_query.js";
import { type HelperShare, type LeaderShare, type Prio3, USAGE_QUERY_RANDOMNESS } from "./prio3.js";
import { XofTurboShake128 } from "./xof.js";
import { concatBytes } from "../seal.js";

export interface VerifyState {
  readonly outShare: F.Vec;
  readonly correctedSeed: Uint8Array | null;
}

export interface VerifierShare {
  readonly verifiers: F.Vec;
  readonly part: Uint8Array | null;
}

function queryRands(vdaf: Prio3, verifyKey: Uint8Array, ctx: Uint8Array, nonce: Uint8Array): F.Vec {
  return XofTurboShake128.expandIntoVec(verifyKey, vdaf.dst(USAGE_QUERY_RANDOMNESS, ctx),
    concatBytes(new Uint8Array([vdaf.proofs]), nonce), vdaf.flp.queryRandLen * vdaf.proofs);
}

/** Aggregator aggId's state and verifier share (InvalidProofError: a root-of-unity query). */
export function verifyInit(vdaf: Prio3, verifyKey: Uint8Array, ctx: Uint8Array, aggId: number,
                           nonce: Uint8Array, publicShare: Uint8Array[] | null,
                           share: LeaderShare | HelperShare): [VerifyState, VerifierShare] {
  const c = vdaf.circuit as VerifiableCircuit, flp = vdaf.flp;
  const meas = "seed" in share ? vdaf.helperMeasShare(ctx, aggId, share.seed) : share.measurement;
  const proofs = "seed" in share ? vdaf.helperProofsShare(ctx, aggId, share.seed) : share.proofs;
  let joint = F.zeros(0), corrected: Uint8Array | null = null, part: Uint8Array | null = null;
  if (vdaf.usesJointRand) {
    if (share.blind === null || publicShare === null) {
      throw new InvalidProofError("this circuit needs a blind and a public share");
    }
    part = vdaf.jointRandPart(ctx, aggId, share.blind, meas, nonce);
    const parts = publicShare.slice();
    parts[aggId] = part;
    corrected = vdaf.jointRandSeed(ctx, parts);
    joint = vdaf.jointRands(ctx, corrected);
  }
  const q = queryRands(vdaf, verifyKey, ctx, nonce);
  const pl = flp.proofLen, ql = flp.queryRandLen, jl = c.jointRandLen;
  const verifiers: F.Vec[] = [];
  for (let i = 0; i < vdaf.proofs; i++) {
    verifiers.push(query(flp, meas, F.slice(proofs, i * pl, (i + 1) * pl), F.slice(q, i * ql, (i + 1) * ql),
      F.slice(joint, i * jl, (i + 1) * jl), vdaf.shares));
  }
  return [{ outShare: c.truncate(meas), correctedSeed: corrected }, { verifiers: F.concat(verifiers), part }];
}

/** The verifier message, or InvalidProofError if a proof fails. */
export function verifierSharesToMessage(vdaf: Prio3, ctx: Uint8Array, shares: VerifierShare[]): Uint8Array | null {
  let total = F.zeros(vdaf.flp.verifierLen * vdaf.proofs);
  for (const s of shares) total = F.add(total, s.verifiers);
  const vl = vdaf.flp.verifierLen;
  for (let i = 0; i < vdaf.proofs; i++) {
    if (!decide(vdaf.flp, F.slice(total, i * vl, (i + 1) * vl))) {
      throw new InvalidProofError(`proof ${i} of ${vdaf.proofs} failed the verifier check: refuse it`);
    }
  }
  if (!vdaf.usesJointRand) return null;
  return vdaf.jointRandSeed(ctx, shares.map((s) => s.part!));
}

/** The output share, if the client's joint randomness is the one the aggregators derived. */
export function verifyNext(state: VerifyState, message: Uint8Array | null): F.Vec {
  const a = state.correctedSeed, b = message;
  const same = a === null ? b === null : b !== null && a.length === b.length && a.every((x, i) => x === b[i]);
  if (!same) throw new InvalidProofError("joint randomness check failed: refuse the report");
  return state.outShare;
}

export function encodeVerifierShare(share: VerifierShare): Uint8Array {
  return concatBytes(F.encode(share.verifiers), share.part ?? new Uint8Array(0));
}
