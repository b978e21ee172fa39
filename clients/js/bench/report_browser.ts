/**
 * One dp-pop report (draw, Prio3 proof, seal to the proxy and the server) timed in a browser
 * page: benchmarks/bench_js_report.py bundles this file, sets `window.benchInput` (the
 * round's terms as Python computes them, the history, the repeats) and reads
 * `window.benchResult`. Keys are fresh X25519 pairs; every draw is crypto.getRandomValues.
 */
import { SecureSource } from "../src/random.js";
import { generateKeyPair, ready } from "../src/seal.js";
import { buildDpPopUpload, dpPopRoundCheck, type DpPopRound } from "../src/systems/dp_pop.js";

interface BenchInput { round: DpPopRound; items: number[]; repeats: number; warmup: number }
interface BenchResult { times_ms: number[]; setup_ms: number; bytes: number; userAgent: string }

declare global {
  interface Window { benchInput: BenchInput; benchResult: Promise<BenchResult> }
}

async function run(input: BenchInput): Promise<BenchResult> {
  await ready();
  const keys = { proxyKey: generateKeyPair().publicKey, serverKey: generateKeyPair().publicKey,
                 publishedValidity: { kind: "prio3", ...input.round.terms } };
  const rng = new SecureSource();
  let t = performance.now();
  dpPopRoundCheck(input.round);
  const setup = performance.now() - t;
  const history = { items: input.items };
  let bytes = 0;
  for (let i = 0; i < input.warmup; i++) buildDpPopUpload(input.round, history, keys, 0, rng);
  const times: number[] = [];
  for (let i = 0; i < input.repeats; i++) {
    t = performance.now();
    bytes = buildDpPopUpload(input.round, history, keys, 0, rng).length;
    times.push(performance.now() - t);
  }
  return { times_ms: times, setup_ms: setup, bytes, userAgent: navigator.userAgent };
}

window.benchResult = run(window.benchInput);
