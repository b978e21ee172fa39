/** Published protocol descriptions as a server sends them, for the tests. */
import { parseDescription, type ProtocolDescription } from "../../src/description.js";
import { secureSumTerms, type SecureSumShape, type DeviceReader, type TermsFields } from "../../src/terms.js";

export function dplcf(config: Record<string, unknown> = {}, n = 1682): ProtocolDescription {
  return parseDescription({
    system: "dplcf-sp", family: "dplcf", n_items: n, rounds: 1, aggregator: "mean",
    upload: "ObfuscatedBits", forward: "ObfuscatedBits",
    config: { flip: "symmetric", epsilon: 1.0, neighbours: 50, neighbourhood: "item", ...config },
  });
}

export function fmf(config: Record<string, unknown> = {}, n = 1682): ProtocolDescription {
  return parseDescription({
    system: "fmf-ldp", family: "fmf", n_items: n, rounds: 20, aggregator: "mean",
    upload: "GradientReports", forward: "ShuffledReports",
    config: { cells: "chosen", mechanism: "binary", epsilon: 0.5, k: 10, factors: 16,
              epochs: 20, alpha: 0.0, regularization: 0.1, clip: 1.0, ...config },
  });
}

export function dpPop(config: Record<string, unknown> = {}, n = 1682): ProtocolDescription {
  return parseDescription({
    system: "dp-pop", family: "dp_pop", n_items: n, rounds: 1, aggregator: "secure",
    upload: "SumUpload", forward: "SumRelease",
    config: { epsilon: 1.0, delta: 1e-6, n_clients: 220, min_honest: 20, k: 5,
              aggregation: "secure", ...config },
  });
}

/** A stand-in secure-sum shape (jsprio computes the real one): `rounds` rounds of 1000 bytes. */
export function popShape(rounds = 1, deltaCost = 0): (eps: number) => SecureSumShape {
  return () => ({ rounds, roundBytes: new Array<number>(rounds).fill(1000),
                  artefactBytes: 100_000, deltaCost });
}

export function popTerms(rounds = 1, deltaCost = 0) {
  return (read: DeviceReader, info: ProtocolDescription): TermsFields =>
    secureSumTerms(read, info, popShape(rounds, deltaCost), "dp-pop");
}
