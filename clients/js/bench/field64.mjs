// Field64 multiplication: BigInt ((a * b) % p on BigUint64Array) against the SDK's 32-bit
// limbs (src/prio3/field64.ts mulTo), on 2^18 pseudo-random pairs; CPU time per product.
//   cd clients/js && npm run build && node bench/field64.mjs
import * as F from "../dist/src/prio3/field64.js";

const P = F.P, N = 1 << 18;
const a = new BigUint64Array(N), b = new BigUint64Array(N);
let s = 12345n;
for (let i = 0; i < N; i++) {
  s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  a[i] = s % P;
  s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  b[i] = s % P;
}
const A = new Int32Array(a.buffer), B = new Int32Array(b.buffer), C = new Int32Array(2 * N);
const c = new BigUint64Array(N);
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const rows = [];
for (let rep = 0; rep < 5; rep++) {
  let t = cpu();
  for (let i = 0; i < N; i++) c[i] = (a[i] * b[i]) % P;
  const big = (cpu() - t) * 1e6 / N;
  t = cpu();
  for (let i = 0; i < N; i++) F.mulTo(C, 2 * i, A[2 * i], A[2 * i + 1], B[2 * i], B[2 * i + 1]);
  const limbs = (cpu() - t) * 1e6 / N;
  rows.push({ bigint_ns: +big.toFixed(1), limbs_ns: +limbs.toFixed(1) });
}
const same = new BigUint64Array(C.buffer).every((x, i) => x === c[i]);
console.log(JSON.stringify({ products: N, same, runs: rows }));
