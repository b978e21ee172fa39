/** Published protocol descriptions as a server sends them, for the tests. */
import { parseDescription, type ProtocolDescription } from "../../src/description.js";
import { secureSumTerms, type SecureSumShape, type DeviceReader, type TermsFields } from "../../src/terms.js";

export function dplcf(config: Record<string, unknown> = {}, n = 1682): ProtocolDescription {
  return parseDescription({
    system: "dplcf-sp", family: "dplcf", n_items: n, rounds: 1, aggregator: "mean",
    upload: "ObfuscatedBits", forward: "ObfuscatedBits",
    config: { flip: "symmetric", estimator: "unbiased", epsilon: 1.0, neighbours: 50,
              neighbourhood: "item", batch_size: 4096, aggregator: "mean", history_cap: null,
              ...config },
  });
}

export function fmf(config: Record<string, unknown> = {}, n = 1682): ProtocolDescription {
  return parseDescription({
    system: "fmf-ldp", family: "fmf", n_items: n, rounds: 20, aggregator: "mean",
    upload: "GradientReports", forward: "ShuffledReports",
    config: { factors: 16, regularization: 0.1, lr: 0.001, alpha: 0.0, epochs: 20,
              server_steps: 20, epsilon: 0.5, k: 10, clip: 1.0, mechanism: "binary",
              exact: false, init_scale: 0.1, shuffle_threshold: 100, user_budget: null,
              delta: 1e-6, batch_size: 8192, allow_no_update: false, cells: "chosen",
              aggregator: "mean", ...config },
  });
}

export function dpPop(config: Record<string, unknown> = {}, n = 1682): ProtocolDescription {
  return parseDescription({
    system: "dp-pop", family: "dp_pop", n_items: n, rounds: 1, aggregator: "secure",
    upload: "SumUpload", forward: "SumRelease",
    config: { epsilon: 1.0, delta: 1e-6, k: 5, sampling: "uniform", aggregation: "secure",
              min_honest: 20, n_clients: 220, validity: "prio3", ...config },
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
