// One TypeScript device against real services (driven by test_ts_device_round.py):
//   node ts_device.mjs report SPEC.json  -> {"reported": true, "bytes": n, "round": r}
//   node ts_device.mjs fetch SPEC.json   -> the decoded artefact's shape
// SPEC: sdk (the built clients/js/dist/src/index.js), server, proxy, clientId, token, items.
import { readFileSync } from "node:fs";

const [mode, specPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));
const sdk = await import(spec.sdk);

const server = new sdk.ServerAPI(spec.server, { deadlineMs: 30_000 });
const proxy = new sdk.ProxyAPI(spec.proxy, { deadlineMs: 30_000 });
const info = await server.protocol();
const source = new sdk.SecureSource();
const history = { items: spec.items };
const c = info.config;
let out;
if (mode === "report") {
  const state = await proxy.round();
  const round = state.round;
  let body;
  if (info.family === "dplcf") {
    body = sdk.dplcfStep({ nItems: info.nItems, mechanism: c.flip, epsilon: c.epsilon }, history, source);
  } else {
    const assigned = c.cells === "assigned";
    const kind = assigned ? sdk.Kind.ItemMatrix64 : sdk.Kind.ItemMatrix;
    const art = await server.artefact(assigned ? "item-matrix-f64" : "item-matrix",
      { expected: sdk.itemMatrixSize(kind, info.nItems, c.factors) });
    const decoded = assigned ? sdk.decodeItemMatrix64(art.data) : sdk.decodeItemMatrix(art.data);
    const V = sdk.checkItemMatrixFor(decoded, info.nItems, c.factors);
    const cellsToken = assigned
      ? sdk.parseCellsToken((await proxy.clientSecret(spec.clientId, spec.token)).cells_token)
      : undefined;
    body = sdk.fmfStep({ nItems: info.nItems, factors: c.factors, k: c.k, alpha: c.alpha,
      regularization: c.regularization, clip: c.clip, mechanism: c.mechanism, epsilon: c.epsilon,
      cells: c.cells, cellsToken }, history, V, BigInt(spec.clientId), source);
  }
  await proxy.submit(round, spec.clientId, spec.token, body);
  out = { reported: true, bytes: body.length, round };
} else {
  const n = info.nItems;
  const k = Math.min(c.neighbours, n - 1);
  const art = await server.artefact("neighbours",
    { expected: sdk.neighbourListsSize(n, k, c.neighbourhood === "user") });
  const lists = sdk.checkNeighbourListsFor(sdk.decodeNeighbourLists(art.data), n);
  out = { nItems: lists.nItems, k: lists.k, etag: art.etag };
  const again = await server.artefact("neighbours",
    { expected: sdk.neighbourListsSize(n, k, c.neighbourhood === "user") });
  out.notModified = server.notModified;
  out.same = again === art;
}
console.log(JSON.stringify(out));
