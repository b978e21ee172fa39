// One TypeScript dp-pop device against real services (driven by test_ts_prio3_round.py):
//   node ts_dp_pop.mjs SPEC.json -> {"bytes": n, "round": r, "y": [...]}
// SPEC: sdk (the built clients/js/dist/src/index.js), server, proxy, clientId, token, items,
// calibration ({muShare, terms, truncationTv}: Python's, for the config). It reads the
// protocol and the broadcast, checks the proxy's published check, draws, proves, seals and
// submits; it prints its noised vector y (a test device only: the sum must equal the sum of
// these).
import { readFileSync } from "node:fs";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const sdk = await import(spec.sdk);
await sdk.ready();
const server = new sdk.ServerAPI(spec.server, { deadlineMs: 30_000 });
const proxy = new sdk.ProxyAPI(spec.proxy, { deadlineMs: 30_000 });
const info = await server.protocol();
const cal = spec.calibration;
const round = { nItems: info.nItems, sampling: info.config.sampling, muShare: cal.muShare, terms: cal.terms };
const state = await proxy.round();
const published = state.published;
const shape = sdk.dpPopShape(round, cal.truncationTv, info.config.epsilon);
const model = sdk.decodePopularity((await server.artefact("model", { limit: shape.artefactBytes })).data,
  info.nItems);
sdk.checkPublishedValidity(round, published.validity);
const rng = new sdk.SecureSource();
const y = sdk.dpPopVector(round, { items: spec.items }, rng);
const proxyKey = Uint8Array.from(Buffer.from(published.secure_sum_proxy_key, "hex"));
const body = sdk.proveAndSeal(sdk.dpPopRoundCheck(round), proxyKey, model.serverKey, y, state.round, rng);
await proxy.submit(state.round, spec.clientId, spec.token, body);
console.log(JSON.stringify({ bytes: body.length, round: state.round, y: Array.from(y) }));
