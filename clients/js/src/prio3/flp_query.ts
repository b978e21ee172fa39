/**
 * The FLP's verifier side (draft-irtf-cfrg-vdaf-20 §7.3.3-4; Python: vdaf.flp.Flp.query and
 * decide, vdaf.polynomial's barycentric evaluations), for tests and for a device that checks
 * its own proofs. Scalar bigint arithmetic: the aggregators (Python) verify at scale.
 *
 * query (on shares): call k's gadget output is the gadget polynomial at w_p^k; the verifier
 * share holds the (reduced) circuit output and, at a query point t (not a root of unity),
 * every wire polynomial and the gadget polynomial. decide (on the summed verifier): the
 * output is 0 and G(wires(t)) = gadget(t).
 */
import { InvalidProofError } from "./errors.js";
import * as F from "./field64.js";
import type { Circuit, Flp } from "./flp.js";
import { nextPowerOf2 } from "./ntt.js";

const P = F.P;
const mod = (x: bigint): bigint => ((x % P) + P) % P;

/** The verifier's extra knowledge of a circuit: its outputs from the gadget outputs (affine,
 * so on shares) and its output share. */
export interface VerifiableCircuit extends Circuit {
  outputs(meas: F.Vec, jointRand: F.Vec, numShares: number, gadgetOutputs: F.Vec[]): F.Vec;
  truncate(meas: F.Vec): F.Vec;
}

function roots(n: number): bigint[] {
  const w = F.root(n), out = [1n];
  for (let i = 1; i < n; i++) out.push((out[i - 1]! * w) % P);
  return out;
}

/** f(x) for f of degree < m given by its values at the first m of the n-th roots x_i:
 * f(x) = (x^n - 1) / (n prod_{j >= m} (x - x_j)) sum_i x_i P_i f(x_i) / (x - x_i),
 * P_i = prod_{j >= m} (x_i - x_j); at a root, read or extend by the same weights. */
export function evaluateFromPrefix(values: bigint[], n: number, x: bigint): bigint {
  const m = values.length, xs = roots(n);
  const weight = (i: number): bigint => {
    let p = xs[i]!;
    for (let j = m; j < n; j++) p = (p * mod(xs[i]! - xs[j]!)) % P;
    return p;
  };
  const at = xs.indexOf(mod(x));
  if (at >= 0 && at < m) return values[at]!;
  let total = 0n;
  for (let i = 0; i < m; i++) {
    total = (total + weight(i) * values[i]! % P * F.invB(mod(x - xs[i]!))) % P;
  }
  let missing = BigInt(n);
  for (let j = m; j < n; j++) if (j !== at) missing = (missing * mod(x - xs[j]!)) % P;
  if (at >= 0) { // x = x_e, e >= m: the limit of (x^n - 1) / (x - x_e) is n x_e^(n-1) = n / x_e
    return total * BigInt(n) % P * F.invB(xs[at]!) % P * F.invB(missing) % P;
  }
  return total * mod(F.powB(x, BigInt(n)) - 1n) % P * F.invB(missing) % P;
}

/** A share of the verifier from shares of meas and of the proof (Python: Flp.query). */
export function query(flp: Flp, meas: F.Vec, proof: F.Vec, queryRand: F.Vec, jointRand: F.Vec,
                      numShares: number): F.Vec {
  const c = flp.circuit as VerifiableCircuit;
  const inputs = c.gadgetInputs(meas, jointRand, numShares);
  const outs: F.Vec[] = [], tests: [bigint[][], bigint[], number][] = [];
  let at = 0;
  c.gadgets.forEach((g, gi) => {
    const p = flp.wireLens[gi]!, m = flp.polyLens[gi]!, n = nextPowerOf2(m), calls = c.gadgetCalls[gi]!;
    const seeds = F.toBigInts(F.slice(proof, at, at + g.arity));
    const values = F.toBigInts(F.slice(proof, at + g.arity, at + g.arity + m));
    at += g.arity + m;
    const w = F.root(n);
    const o: bigint[] = [];
    for (let k = 1; k <= calls; k++) o.push(evaluateFromPrefix(values, n, F.powB(w, BigInt((n / p) * k))));
    outs.push(F.fromInts(o));
    const wires = seeds.map((s, j) => [s, ...F.toBigInts(inputs[gi]![j]!).slice(0, calls)]);
    tests.push([wires, values, n]);
  });
  const out = c.outputs(meas, jointRand, numShares, outs);
  let v: F.Vec, points: bigint[];
  if (c.evalOutputLen > 1) {
    v = F.dot(out, F.slice(queryRand, 0, c.evalOutputLen));
    points = F.toBigInts(F.slice(queryRand, c.evalOutputLen, F.len(queryRand)));
  } else {
    v = out;
    points = F.toBigInts(queryRand);
  }
  const verifier: bigint[] = [F.get(v, 0)];
  tests.forEach(([wires, values, n], gi) => {
    const t = points[gi]!, p = flp.wireLens[gi]!;
    if (F.powB(t, BigInt(p)) === 1n) {
      throw new InvalidProofError("the query point is a root of unity: refuse this report");
    }
    for (const wire of wires) {
      const padded = wire.concat(Array<bigint>(p - wire.length).fill(0n));
      verifier.push(evaluateFromPrefix(padded, p, t));
    }
    verifier.push(evaluateFromPrefix(values, n, t));
  });
  return F.fromInts(verifier);
}

/** True iff the circuit output is zero and every gadget test passes. */
export function decide(flp: Flp, verifier: F.Vec): boolean {
  if (F.get(verifier, 0) !== 0n) return false;
  let at = 1;
  for (const g of flp.circuit.gadgets) {
    const rows = Array.from({ length: g.arity }, (_, j) => F.slice(verifier, at + j, at + j + 1));
    const check = F.get(verifier, at + g.arity);
    at += g.arity + 1;
    if (F.get(g.evaluate(rows, 1), 0) !== check) return false;
  }
  return true;
}
