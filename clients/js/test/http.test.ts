/** The HTTP client against a local hostile server (node:http): routes, token headers, ETag,
 * size caps, encodings, error mapping and the total deadline. */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  BadReply, ProxyAPI, ServerAPI, ServiceError, Unreachable, retrying,
} from "../src/index.js";
import { readFixture } from "./fixture_io.js";

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;
let handler: Handler = (_req, res) => res.end();
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => handler(req, res, Buffer.concat(chunks)));
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
after(() => server.close());

function json(res: ServerResponse, status: number, doc: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(JSON.stringify(doc));
}

const protocols = readFixture<{ valid: Record<string, any>[] }>("python", "configs.json").valid;  // eslint-disable-line

test("protocol(): a published description decodes; a malformed one is a BadReply naming the field",
  async () => {
    const api = new ServerAPI(url);
    handler = (req, res) => {
      assert.equal(req.url, "/v1/protocol");
      json(res, 200, protocols[0]);
    };
    assert.equal((await api.protocol()).family, "dplcf");
    handler = (_req, res) => json(res, 200, { ...protocols[0], config: { ...protocols[0]!.config, epsilon: "1" } });
    await assert.rejects(api.protocol(), (e: Error) => e instanceof BadReply && /epsilon/.test(e.message));
    handler = (_req, res) => json(res, 200, [1, 2]);
    await assert.rejects(api.protocol(), BadReply);
    handler = (_req, res) => res.end("not json");
    await assert.rejects(api.protocol(), BadReply);
  });

test("artefact(): ETag conditional fetch, 304 served from the cache", async () => {
  const api = new ServerAPI(url);
  const seen: (string | undefined)[] = [];
  handler = (req, res) => {
    seen.push(req.headers["if-none-match"] as string | undefined);
    if (req.headers["if-none-match"] === '"v3"') {
      res.writeHead(304);
      res.end();
      return;
    }
    res.writeHead(200, { ETag: '"v3"', "X-Dprec-Version": "3", "Content-Length": "4" });
    res.end(Buffer.from([1, 2, 3, 4]));
  };
  const a = await api.artefact("item-matrix", { expected: 4 });
  assert.deepEqual(Array.from(a.data), [1, 2, 3, 4]);
  assert.equal(a.version, 3);
  const b = await api.artefact("item-matrix", { expected: 4 });
  assert.equal(b, a);
  assert.equal(api.notModified, 1);
  assert.deepEqual(seen, [undefined, '"v3"']);
});

test("artefact(): sizes, encodings and headers that are not what was asked are refused",
  async () => {
    const api = new ServerAPI(url);
    const cases: [string, Handler][] = [
      ["declared != expected", (_q, res) => {
        res.writeHead(200, { ETag: "e", "X-Dprec-Version": "1", "Content-Length": "5" });
        res.end(Buffer.alloc(5));
      }],
      ["chunked, longer than expected", (_q, res) => {
        res.writeHead(200, { ETag: "e", "X-Dprec-Version": "1" });
        res.write(Buffer.alloc(3));
        res.end(Buffer.alloc(3));
      }],
      ["chunked, shorter than expected", (_q, res) => {
        res.writeHead(200, { ETag: "e", "X-Dprec-Version": "1" });
        res.end(Buffer.alloc(2));
      }],
      ["gzip", (_q, res) => {
        res.writeHead(200, { ETag: "e", "X-Dprec-Version": "1", "Content-Encoding": "gzip" });
        res.end(Buffer.alloc(4));
      }],
      ["no version", (_q, res) => {
        res.writeHead(200, { ETag: "e" });
        res.end(Buffer.alloc(4));
      }],
      ["no etag", (_q, res) => {
        res.writeHead(200, { "X-Dprec-Version": "1" });
        res.end(Buffer.alloc(4));
      }],
      ["redirect", (_q, res) => {
        res.writeHead(302, { Location: "http://example.invalid/" });
        res.end();
      }],
    ];
    for (const [name, h] of cases) {
      handler = h;
      await assert.rejects(api.artefact("model", { expected: 4 }), BadReply, name);
    }
    handler = (_q, res) => {
      res.writeHead(200, { ETag: "e", "X-Dprec-Version": "1" });
      res.end(Buffer.alloc(11));
    };
    await assert.rejects(api.artefact("model", { limit: 10 }), BadReply, "over the limit");
  });

test("refusals map to ServiceError (4xx, 502-504, with Retry-After) or Unreachable (5xx)",
  async () => {
    const proxy = new ProxyAPI(url);
    handler = (_q, res) => json(res, 409, { error: "already submitted in this round" });
    await assert.rejects(proxy.submit(0, 1, "t", new Uint8Array(1)), (e: unknown) =>
      e instanceof ServiceError && e.status === 409 && /already submitted/.test(e.detail) && !e.transient);
    handler = (_q, res) => json(res, 429, { error: "slow down" }, { "Retry-After": "2" });
    await assert.rejects(proxy.round(), (e: unknown) =>
      e instanceof ServiceError && e.transient && e.retryAfter === 2);
    handler = (_q, res) => json(res, 500, { error: "boom" });
    await assert.rejects(proxy.round(), Unreachable);
    handler = (_q, res) => {
      res.writeHead(400);
      res.end("x".repeat(200_000));
    };
    await assert.rejects(proxy.round(), (e: unknown) => e instanceof ServiceError && e.detail.length <= 200);
  });

test("submit and clientSecret send the token headers, the route and the body", async () => {
  const proxy = new ProxyAPI(url + "/");
  let got: [string | undefined, string | undefined, string | undefined, string, string, number[]] | null = null;
  handler = (req, res, body) => {
    got = [req.headers.authorization, req.headers["x-dprec-client"] as string,
      req.headers["content-type"], req.method!, req.url!, Array.from(body)];
    json(res, 200, { accepted: true });
  };
  assert.deepEqual(await proxy.submit(4, 12345678901234567n, "tok", Uint8Array.from([9, 8])),
    { accepted: true });
  assert.deepEqual(got, ["Bearer tok", "12345678901234567", "application/octet-stream", "POST",
    "/v1/rounds/4/reports", [9, 8]]);
  handler = (req, res) => {
    got = [req.headers.authorization, req.headers["x-dprec-client"] as string, undefined,
      req.method!, req.url!, []];
    json(res, 200, { cells_token: "ab".repeat(32) });
  };
  assert.equal((await proxy.clientSecret(3, "tok"))["cells_token"], "ab".repeat(32));
  assert.deepEqual(got, ["Bearer tok", "3", undefined, "GET", "/v1/client/secret", []]);
});

test("a service dripping its reply past the exchange's deadline is Unreachable", async () => {
  const api = new ServerAPI(url, { deadlineMs: 300 });
  let timer: NodeJS.Timeout | undefined;
  handler = (_q, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.write("{");
    timer = setInterval(() => res.write(" "), 50);
    res.on("close", () => clearInterval(timer));
  };
  await assert.rejects(api.protocolDoc(), (e: unknown) =>
    e instanceof Unreachable && /deadline/.test(e.message));
  clearInterval(timer);
});

test("a refused connection is Unreachable; retrying() retries transient refusals only",
  async () => {
    await assert.rejects(new ServerAPI("http://127.0.0.1:9/").round(), Unreachable);
    let calls = 0;
    handler = (_q, res) => (++calls < 3 ? json(res, 503, { error: "busy" }) : json(res, 200, { round: 1 }));
    const proxy = new ProxyAPI(url);
    assert.deepEqual(await retrying(() => proxy.round(), 10_000), { round: 1 });
    assert.equal(calls, 3);
    calls = 0;
    handler = (_q, res) => { calls++; json(res, 403, { error: "no" }); };
    await assert.rejects(retrying(() => proxy.round(), 10_000), ServiceError);
    assert.equal(calls, 1);
  });
