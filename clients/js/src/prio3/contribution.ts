/**
 * The check a secure-sum contribution proves (Python: vdaf.contribution): Prio3 over a
 * {@link BoundedVector} with two aggregators (Leader = the server, Helper = the proxy) and
 * PROOFS chosen for 2^-128 soundness (draft §9.8: the smallest PROOFS >= 3 with
 * eps1^PROOFS <= 2^-128, eps1 = (sum_g D_g (p_g - 1) + c_jr + 1) / (|F| - max p)).
 */
import { SecureSumError } from "../errors.js";
import { BoundedVector } from "./bounded_vector.js";
import * as F from "./field64.js";
import type { ParallelSum } from "./gadgets.js";
import { Prio3 } from "./prio3.js";

/** Private-use Prio3 algorithm id of dp-pop's check (draft §10: 0xFFFF0000 and up). */
export const DP_POP_ID = 0xffff0d01;

/** log2 of one proof's soundness error. */
export function soundnessLog2(vdaf: Prio3): number {
  const c = vdaf.circuit as BoundedVector, wl = vdaf.flp.wireLens;
  let terms = c.gadgets.reduce((s, g, i) => s + g.degree * (wl[i]! - 1), 0);
  terms += c.gadgets.reduce((s, g, i) => s + (c.roles[i] === "squares" ? 0 : (g as ParallelSum).count), 0);
  terms += c.evalOutputLen > 1 ? 1 : 0;
  return Math.log2(terms) - Math.log2(Number(F.P - BigInt(Math.max(...wl))));
}

/** One client's encoded report: what travels, and to whom. */
export interface Report {
  /** To both aggregators (bound into both boxes). */
  readonly publicShare: Uint8Array;
  /** Sealed to the server (the Leader). */
  readonly leaderShare: Uint8Array;
  /** Sealed to the proxy (the Helper): 32-byte seed and 32-byte blind. */
  readonly helperShare: Uint8Array;
}

export class ContributionCheck {
  readonly vdaf: Prio3;
  readonly proofs: number;
  readonly ctx: Uint8Array;

  constructor(readonly circuit: BoundedVector, algorithmId: number, readonly name: string,
              proofs?: number) {
    const probe = new Prio3(circuit, 1, algorithmId, 2);
    this.proofs = proofs ?? Math.max(3, Math.ceil(-128 / soundnessLog2(probe)));
    this.vdaf = new Prio3(circuit, this.proofs, algorithmId, 2);
    this.ctx = new TextEncoder().encode(`dprec/secure-sum/${name}`);
  }

  /** Bytes of client randomness {@link shard} takes. */
  get randSize(): number {
    return this.vdaf.randSize;
  }

  /** The report of the integer vector y (nonce: 16 bytes, the message id; rand:
   * {@link randSize} fresh random bytes). */
  shard(y: ArrayLike<number>, nonce: Uint8Array, rand: Uint8Array): Report {
    const why = this.circuit.refusal(y);
    if (why) {
      throw new SecureSumError(`this contribution breaks the ${this.name} check (${why}): an ` +
        "honest client clips, quantises and truncates its noise first");
    }
    const v = this.vdaf;
    const out = v.shardEncoded(this.ctx, this.circuit.encode(y), nonce, rand);
    return {
      publicShare: v.encodePublicShare(out.publicShare),
      leaderShare: v.encodeLeaderShare(out.leader),
      helperShare: v.encodeHelperShare(out.helpers[0]!),
    };
  }

  /** Bytes of the encoded shares. */
  sizes(): { publicShare: number; leaderShare: number; helperShare: number } {
    const v = this.vdaf;
    return { publicShare: v.usesJointRand ? 64 : 0, leaderShare: v.inputShareSize(0),
      helperShare: v.inputShareSize(1) };
  }
}

/** dp-pop's published validity terms (what the proxy publishes as `validity`, Python:
 * secure_sum.checks.check_terms): T, S, B2, k and the proofs. */
export interface DpPopTerms {
  readonly T: number;
  readonly S: number;
  readonly B2: number;
  readonly k: number;
  readonly proofs: number;
}

/** dp-pop's check over `dimension` items: y = v + z, v at most k ones, |z_j| <= T,
 * |sum z| <= S, ||y||^2 <= B2: y_j in [-T, 1 + T], sum y in [-S, k + S] (Python:
 * vdaf.contribution.dp_pop_check). SecureSumError if the terms' proofs differ from the
 * count this check needs. */
export function dpPopCheck(dimension: number, terms: DpPopTerms): ContributionCheck {
  const { T, S, B2, k } = terms;
  for (const [name, v] of Object.entries({ T, S, B2, k, dimension })) {
    if (!Number.isSafeInteger(v) || v < 0) throw new SecureSumError(`dp-pop's ${name} must be an integer >= 0, got ${v}`);
  }
  const circuit = new BoundedVector({ dimension, low: -T, high: 1 + T, sumRange: [-S, k + S],
    l2BoundSq: B2 });
  const check = new ContributionCheck(circuit, DP_POP_ID, "dp-pop");
  if (check.proofs !== terms.proofs) {
    throw new SecureSumError(`the published check has ${terms.proofs} proofs, this device ` +
      `computes ${check.proofs} for 2^-128: refused`);
  }
  return check;
}
