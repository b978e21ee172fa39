// One dp-pop report (draw, Prio3 proof, seal) at ML-100K's d = 1,682 under Node, timed.
//   cd clients/js && npm run build && node bench/dp_pop_report.mjs [reports] [--no-wasm]
// The round's terms are those Python computes for DpPopConfig(epsilon=1, n_clients=943)
// (clients/js/fixtures/python/prio3_dp_pop_1682.json). Prints JSON: per-report times (ms),
// the median, the CPU time per report, the phases of one report (draw, shard and prove,
// seal) and the load average (on a shared machine the times are upper bounds). The first
// report includes compiling (JIT, the WebAssembly kernel).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { buildDpPopUpload, dpPopRoundCheck, dpPopVector } from "../dist/src/systems/dp_pop.js";
import { generateKeyPair, ready, seal } from "../dist/src/seal.js";
import { SecureSource } from "../dist/src/random.js";
import { setWasmEnabled, wasmKernel } from "../dist/src/prio3/wasm64.js";

const reports = Number(process.argv[2] ?? 20);
if (process.argv.includes("--no-wasm")) setWasmEnabled(false); // the JavaScript arithmetic only
const fx = JSON.parse(readFileSync(new URL("../fixtures/python/prio3_dp_pop_1682.json", import.meta.url)));
await ready();
const round = { nItems: fx.dimension, sampling: "uniform", muShare: fx.round.mu_share, terms: fx.terms };
const keys = { proxyKey: generateKeyPair().publicKey, serverKey: generateKeyPair().publicKey,
  publishedValidity: { kind: "prio3", ...fx.terms } };
const history = { items: Array.from({ length: 120 }, (_, i) => 13 * i + 5) };
const rng = new SecureSource();
let t = performance.now();
dpPopRoundCheck(round);
const setup = performance.now() - t;
const times = [];
let bytes = 0;
const cpu0 = process.cpuUsage();
for (let i = 0; i < reports; i++) {
  t = performance.now();
  bytes = buildDpPopUpload(round, history, keys, 0, rng).length;
  times.push(performance.now() - t);
}
const cpuUsed = process.cpuUsage(cpu0);
const cpuMs = (cpuUsed.user + cpuUsed.system) / 1000;
const check = dpPopRoundCheck(round);
t = performance.now();
const y = dpPopVector(round, history, rng);
const draw = performance.now() - t;
t = performance.now();
const rep = check.shard(y, rng.bytes(16), rng.bytes(check.randSize));
const shard = performance.now() - t;
t = performance.now();
seal(keys.proxyKey, rep.helperShare, new Uint8Array(64));
seal(keys.serverKey, rep.leaderShare, new Uint8Array(64));
const sealMs = performance.now() - t;
const sorted = times.slice().sort((a, b) => a - b);
const load = (await import("node:os")).loadavg()[0];
console.log(JSON.stringify({
  d: fx.dimension, wasm: wasmKernel() !== null, proofs: check.proofs, upload_bytes: bytes, reports, setup_ms: +setup.toFixed(1),
  first_ms: +times[0].toFixed(1), median_ms: +sorted[Math.floor(sorted.length / 2)].toFixed(1),
  min_ms: +sorted[0].toFixed(1), cpu_ms_per_report: +(cpuMs / reports).toFixed(1),
  phases_ms: { draw: +draw.toFixed(1), shard_and_prove: +shard.toFixed(1), seal: +sealMs.toFixed(1) },
  load_average: +load.toFixed(2),
}));
