/** DeviceClient end to end with http.ts's ServerAPI and ProxyAPI (over a stand-in fetch) and
 * the real dplcf-sp and fmf-ldp steps: the messages sent decode as the protocol's, are of the
 * size the terms imply, and the ranking uses the broadcast. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeviceClient, type ProxyApi, type ServerApi } from "../src/device.js";
import { ProxyAPI, ServerAPI, type FetchLike } from "../src/http.js";
import { openNodeLedger } from "../src/node.js";
import { dplcfSteps, fmfSteps } from "../src/steps.js";
import { decodeMessage } from "../src/wire/any.js";
import { encodeNeighbourLists } from "../src/wire/dplcf.js";
import { encodeItemMatrix } from "../src/wire/item_matrix.js";
import { dplcf, fmf } from "./helpers/descriptions.js";

/** The two services behind one stand-in fetch: `http://server` and `http://proxy`. */
function services(doc: Record<string, unknown>, artefacts: Record<string, Uint8Array>) {
  const received: Uint8Array[] = [];
  const json = (status: number, body: unknown) => new Response(JSON.stringify(body),
    { status, headers: { "Content-Type": "application/json" } });
  const fetch: FetchLike = async (input, init) => {
    const url = new URL(input);
    const path = url.pathname;
    if (url.host === "server" && path === "/v1/protocol") return json(200, doc);
    if (url.host === "server" && path.startsWith("/v1/artefacts/")) {
      const body = artefacts[path.slice("/v1/artefacts/".length)];
      if (body === undefined) return json(404, { error: "no such artefact" });
      return new Response(body.slice().buffer as ArrayBuffer, { status: 200, headers: { "X-Dprec-Version": "1", ETag: '"v1"',
                                                          "Content-Length": String(body.length) } });
    }
    if (url.host === "proxy" && path === "/v1/round") {
      return json(200, { started: true, finished: false, round: 0, published: {} });
    }
    if (url.host === "proxy" && path === "/v1/client/secret") return json(200, { cells_token: "ab".repeat(32) });
    if (url.host === "proxy" && path === "/v1/rounds/0/reports" && init.method === "POST") {
      if (received.length > 0) return json(409, { error: "client 7 already submitted in round 0" });
      received.push(new Uint8Array(init.body as Uint8Array));
      return json(200, { accepted: true });
    }
    return json(404, { error: `no route ${init.method} ${input}` });
  };
  const server: ServerApi = new ServerAPI("http://server", { fetch });
  const proxy: ProxyApi = new ProxyAPI("http://proxy", { fetch });
  return { server, proxy, received };
}

const folder = () => join(mkdtempSync(join(tmpdir(), "dprec-device-http-")), "state");

test("dplcf-sp through http.ts: one ObfuscatedBits row of N bits, re-sent as is; item-kNN scores", async () => {
  const n = 5;
  const lists = encodeNeighbourLists({ nItems: n, k: 2, indices: [1, 2, 0, 2, 0, 1, 0, 1, 0, 1],
                                       sims: [0.5, 0.25, 0.5, 0.75, 0.25, 0.75, 0.125, 0.25, 0.375, 0.5] });
  const s = services({ ...dplcf({ neighbours: 2 }, n).document }, { neighbours: lists });
  const ledger = await openNodeLedger(folder(), 100);
  const client = new DeviceClient({ clientId: 7, token: "t0k3n", server: s.server, proxy: s.proxy,
                                    ledger, steps: [dplcfSteps(), fmfSteps()] });
  const out = await client.report({ items: [0, 2] });
  assert.equal(out.status, "sent");
  assert.equal(out.epsilon, n * 1.0);
  const sent = decodeMessage(s.received[0] as Uint8Array);
  assert.equal(sent.kind, "ObfuscatedBits");
  assert.equal(out.bytes, (s.received[0] as Uint8Array).length);
  assert.equal((await client.report({ items: [0, 2] })).status, "resent"); // the 409 read as arrived
  // item 1: 0.5 r_2 + 0.75 r_0 = 1.25; item 3: 0.125 r_0; item 4: 0.375 r_0
  assert.deepEqual(Array.from(await client.scores({ items: [0, 2] })), [0.25, 1.25, 0.25, 0.125, 0.375]);
  assert.deepEqual(await client.recommend({ items: [0, 2] }, 3), [1, 4, 3]);
});

test("fmf-ldp through http.ts: k GradientReports from the broadcast V; scores x_u . v_i", async () => {
  const n = 6;
  const f = 2;
  const V = [1, 0, 0, 1, 1, 1, 0.5, 0, 0, 0.5, -1, 0];
  const s = services({ ...fmf({ factors: f, k: 3 }, n).document },
                     { "item-matrix": encodeItemMatrix({ rows: n, cols: f, matrix: V }) });
  const ledger = await openNodeLedger(folder(), 100);
  const client = new DeviceClient({ clientId: 7, token: "t0k3n", server: s.server, proxy: s.proxy,
                                    ledger, steps: [dplcfSteps(), fmfSteps()] });
  const out = await client.report({ items: [0, 2] });
  assert.equal(out.status, "sent");
  assert.equal(out.epsilon, 3 * 0.5);
  const sent = decodeMessage(s.received[0] as Uint8Array);
  assert.equal(sent.kind, "GradientReports");
  // alpha = 0: x_u = (V^T V + 0.1 I)^-1 V^T p = [[3.35, 1], [1, 2.35]]^-1 (2, 1)
  const det = 3.35 * 2.35 - 1;
  const x = [(2.35 * 2 - 1) / det, (-2 + 3.35) / det];
  const want = Array.from({ length: n }, (_, i) => x[0]! * V[2 * i]! + x[1]! * V[2 * i + 1]!);
  const scores = Array.from(await client.scores({ items: [0, 2] }));
  scores.forEach((got, i) => assert.ok(Math.abs(got - want[i]!) < 1e-9, `item ${i}: ${got} != ${want[i]}`));
  assert.deepEqual(await client.recommend({ items: [0, 2] }, 4), [3, 1, 4, 5]);
});
