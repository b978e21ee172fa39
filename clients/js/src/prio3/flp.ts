/**
 * The fully linear proof of Boneh, Boyle, Corrigan-Gibbs, Gilboa, Ishai (CRYPTO 2019,
 * Theorem 4.3) as draft-irtf-cfrg-vdaf-20 §7.3 specifies it: the prover's side
 * (Python: vdaf.flp.Flp.prove).
 *
 * For each gadget (called L times), p = next_power_of_2(1 + L): wire polynomial j takes the
 * values (seed_j, input_j of call 1, ..., of call L, 0, ...) at w_p^0..w_p^(p-1); the proof
 * holds the seeds and the gadget polynomial G(wires) at the first D (p - 1) + 1 of the n-th
 * roots, n = next_power_of_2(D (p - 1) + 1).
 */
import * as F from "./field64.js";
import type { Gadget } from "./gadgets.js";
import { nextPowerOf2, valuesOnLargerDomain } from "./ntt.js";

/** A validity circuit (draft §7.3.2, `Valid`), prover's side. */
export interface Circuit {
  readonly measLen: number;
  readonly jointRandLen: number;
  readonly outputLen: number;
  readonly evalOutputLen: number;
  readonly gadgets: Gadget[];
  readonly gadgetCalls: number[];
  /** Per gadget, its ARITY input rows, each holding that input of every call (length
   * calls). */
  gadgetInputs(meas: F.Vec, jointRand: F.Vec, numShares: number): F.Vec[][];
}

export function wirePolyLen(calls: number): number {
  return nextPowerOf2(1 + calls);
}

export function gadgetPolyLen(degree: number, wireLen: number): number {
  return degree * (wireLen - 1) + 1;
}

/** 1 / numShares in the field, as a 1-element vector. */
export function sharesInv(numShares: number): F.Vec {
  return F.fromInts([F.invB(BigInt(numShares))]);
}

export class Flp {
  readonly wireLens: number[];
  readonly polyLens: number[];
  readonly proveRandLen: number;
  readonly queryRandLen: number;
  readonly proofLen: number;
  readonly verifierLen: number;

  constructor(readonly circuit: Circuit) {
    this.wireLens = circuit.gadgetCalls.map(wirePolyLen);
    this.polyLens = circuit.gadgets.map((g, i) => gadgetPolyLen(g.degree, this.wireLens[i]!));
    this.proveRandLen = circuit.gadgets.reduce((s, g) => s + g.arity, 0);
    this.queryRandLen = circuit.gadgets.length +
      (circuit.evalOutputLen > 1 ? circuit.evalOutputLen : 0);
    this.proofLen = circuit.gadgets.reduce((s, g, i) => s + g.arity + this.polyLens[i]!, 0);
    this.verifierLen = 1 + circuit.gadgets.reduce((s, g) => s + g.arity + 1, 0);
  }

  /** The proof that `meas` is valid. */
  prove(meas: F.Vec, proveRand: F.Vec, jointRand: F.Vec): F.Vec {
    const inputs = this.circuit.gadgetInputs(meas, jointRand, 1);
    const parts: F.Vec[] = [];
    let at = 0;
    this.circuit.gadgets.forEach((g, gi) => {
      const p = this.wireLens[gi]!, m = this.polyLens[gi]!, n = nextPowerOf2(m);
      const calls = this.circuit.gadgetCalls[gi]!;
      const seeds = F.slice(proveRand, at, at + g.arity);
      at += g.arity;
      const rows: F.Vec[] = [];
      for (let j = 0; j < g.arity; j++) {
        const wire = F.zeros(p);
        wire[0] = seeds[2 * j]!;
        wire[1] = seeds[2 * j + 1]!;
        wire.set(inputs[gi]![j]!.subarray(0, 2 * calls), 2);
        rows.push(valuesOnLargerDomain(wire, n).subarray(0, 2 * m));
      }
      parts.push(seeds, g.evaluate(rows, m));
    });
    return F.concat(parts);
  }
}
