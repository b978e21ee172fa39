/**
 * Prio3 sharding (draft-irtf-cfrg-vdaf-20 §7.2.1) over Field64, the client's side
 * (Python: vdaf.prio3.Prio3.shard_encoded and the encodings of §7.2.7).
 *
 * Aggregator 0 (the Leader: dprec's server) receives the measurement share and the proof
 * shares in full; aggregators 1..s-1 (Helpers: dprec's proxy) receive a 32-byte seed each
 * (and a blind where the circuit has joint randomness). The public share holds every
 * aggregator's joint-randomness part XOF(blind, agg_id || nonce || meas_share).
 */
import { concatBytes } from "../seal.js";
import * as F from "./field64.js";
import { type Circuit, Flp } from "./flp.js";
import { SEED_SIZE, XofTurboShake128 } from "./xof.js";

/** The draft's version byte in every domain separation tag (the reference's VERSION at
 * draft-20). */
export const VERSION = 18;
export const USAGE_MEAS_SHARE = 1, USAGE_PROOF_SHARE = 2, USAGE_JOINT_RANDOMNESS = 3;
export const USAGE_PROVE_RANDOMNESS = 4, USAGE_QUERY_RANDOMNESS = 5;
export const USAGE_JOINT_RAND_SEED = 6, USAGE_JOINT_RAND_PART = 7;
export const NONCE_SIZE = 16;

export interface LeaderShare {
  readonly measurement: F.Vec;
  readonly proofs: F.Vec;
  readonly blind: Uint8Array | null;
}

export interface HelperShare {
  readonly seed: Uint8Array;
  readonly blind: Uint8Array | null;
}

export interface Sharded {
  /** The joint-randomness parts, one per aggregator (null without joint randomness). */
  readonly publicShare: Uint8Array[] | null;
  readonly leader: LeaderShare;
  readonly helpers: HelperShare[];
}

export class Prio3 {
  readonly flp: Flp;
  readonly usesJointRand: boolean;
  readonly randSize: number;

  constructor(readonly circuit: Circuit, readonly proofs: number, readonly algorithmId: number,
              readonly shares = 2) {
    if (shares < 2 || shares >= 256 || proofs < 1 || proofs >= 256) {
      throw new RangeError("shares must be in [2, 256) and proofs in [1, 256)");
    }
    this.flp = new Flp(circuit);
    this.usesJointRand = circuit.jointRandLen > 0;
    this.randSize = shares * SEED_SIZE * (this.usesJointRand ? 2 : 1);
  }

  dst(usage: number, ctx: Uint8Array): Uint8Array {
    const head = new Uint8Array(8);
    const view = new DataView(head.buffer);
    head[0] = VERSION;
    view.setUint32(2, this.algorithmId >>> 0, false);
    view.setUint16(6, usage, false);
    return concatBytes(head, ctx);
  }

  private expand(seed: Uint8Array, usage: number, ctx: Uint8Array, binder: Uint8Array,
                 n: number): F.Vec {
    return XofTurboShake128.expandIntoVec(seed, this.dst(usage, ctx), binder, n);
  }

  helperMeasShare(ctx: Uint8Array, aggId: number, seed: Uint8Array): F.Vec {
    return this.expand(seed, USAGE_MEAS_SHARE, ctx, new Uint8Array([aggId]), this.flp.circuit.measLen);
  }

  helperProofsShare(ctx: Uint8Array, aggId: number, seed: Uint8Array): F.Vec {
    return this.expand(seed, USAGE_PROOF_SHARE, ctx, new Uint8Array([this.proofs, aggId]),
      this.flp.proofLen * this.proofs);
  }

  jointRandPart(ctx: Uint8Array, aggId: number, blind: Uint8Array, measShare: F.Vec,
                nonce: Uint8Array): Uint8Array {
    return XofTurboShake128.deriveSeed(blind, this.dst(USAGE_JOINT_RAND_PART, ctx),
      concatBytes(new Uint8Array([aggId]), nonce, F.encode(measShare)));
  }

  jointRandSeed(ctx: Uint8Array, parts: Uint8Array[]): Uint8Array {
    return XofTurboShake128.deriveSeed(new Uint8Array(SEED_SIZE),
      this.dst(USAGE_JOINT_RAND_SEED, ctx), concatBytes(...parts));
  }

  jointRands(ctx: Uint8Array, seed: Uint8Array): F.Vec {
    return this.expand(seed, USAGE_JOINT_RANDOMNESS, ctx, new Uint8Array([this.proofs]),
      this.flp.circuit.jointRandLen * this.proofs);
  }

  /** The public share and the input shares of the encoded measurement `meas`. */
  shardEncoded(ctx: Uint8Array, meas: F.Vec, nonce: Uint8Array, rand: Uint8Array): Sharded {
    if (nonce.length !== NONCE_SIZE || rand.length !== this.randSize) {
      throw new RangeError("incorrect nonce or random bytes size");
    }
    const k = this.shares - 1, jr = this.usesJointRand;
    const seeds: Uint8Array[] = [];
    for (let i = 0; i < this.randSize; i += SEED_SIZE) seeds.push(rand.slice(i, i + SEED_SIZE));
    const helperSeeds = jr ? seeds.filter((_, i) => i < 2 * k && i % 2 === 0) : seeds.slice(0, k);
    const helperBlinds = jr ? seeds.filter((_, i) => i < 2 * k && i % 2 === 1) : Array(k).fill(null);
    const leaderBlind = jr ? seeds[2 * k]! : null;
    const proveSeed = jr ? seeds[2 * k + 1]! : seeds[k]!;
    let leaderMeas = meas;
    const parts: Uint8Array[] = [];
    for (let j = 0; j < k; j++) {
      const share = this.helperMeasShare(ctx, j + 1, helperSeeds[j]!);
      leaderMeas = F.sub(leaderMeas, share);
      if (jr) parts.push(this.jointRandPart(ctx, j + 1, helperBlinds[j]!, share, nonce));
    }
    let joint = F.zeros(0);
    if (jr) {
      parts.unshift(this.jointRandPart(ctx, 0, leaderBlind!, leaderMeas, nonce));
      joint = this.jointRands(ctx, this.jointRandSeed(ctx, parts));
    }
    const pr = this.flp.proveRandLen, jl = this.flp.circuit.jointRandLen;
    const proveRands = this.expand(proveSeed, USAGE_PROVE_RANDOMNESS, ctx,
      new Uint8Array([this.proofs]), pr * this.proofs);
    const proofs: F.Vec[] = [];
    for (let i = 0; i < this.proofs; i++) {
      proofs.push(this.flp.prove(meas, F.slice(proveRands, i * pr, (i + 1) * pr),
        F.slice(joint, i * jl, (i + 1) * jl)));
    }
    let leaderProofs = F.concat(proofs);
    for (let j = 0; j < k; j++) {
      leaderProofs = F.sub(leaderProofs, this.helperProofsShare(ctx, j + 1, helperSeeds[j]!));
    }
    return {
      publicShare: jr ? parts : null,
      leader: { measurement: leaderMeas, proofs: leaderProofs, blind: leaderBlind },
      helpers: helperSeeds.map((seed, j) => ({ seed, blind: helperBlinds[j] ?? null })),
    };
  }

  encodeLeaderShare(share: LeaderShare): Uint8Array {
    return concatBytes(F.encode(share.measurement), F.encode(share.proofs),
      share.blind ?? new Uint8Array(0));
  }

  encodeHelperShare(share: HelperShare): Uint8Array {
    return concatBytes(share.seed, share.blind ?? new Uint8Array(0));
  }

  encodePublicShare(parts: Uint8Array[] | null): Uint8Array {
    return parts === null ? new Uint8Array(0) : concatBytes(...parts);
  }

  /** Bytes of aggregator aggId's encoded input share. */
  inputShareSize(aggId: number): number {
    const blind = this.usesJointRand ? SEED_SIZE : 0;
    if (aggId === 0) {
      return F.ENCODED_SIZE * (this.flp.circuit.measLen + this.flp.proofLen * this.proofs) + blind;
    }
    return SEED_SIZE + blind;
  }
}
