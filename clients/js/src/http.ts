/**
 * The device's side of the HTTP API (Python: dprec.client.http), on fetch: the server's
 * protocol description, round state and artefacts (conditionally, by ETag), the proxy's
 * client secret and submissions (token auth: `Authorization: Bearer <token>` and
 * `X-Dprec-Client: <id>`).
 *
 * The services are untrusted, so every reply is read as hostile: bodies are streamed with a
 * cap (JSON {@link MAX_JSON_BYTES}, artefacts their exact expected size when the caller
 * knows it, else {@link MAX_ARTEFACT_BYTES}); a declared Content-Length above the cap or
 * unequal to the expected size is refused before the body is read; an encoded body is
 * refused (the SDK asks for identity where the runtime lets it); a reply that is not the JSON
 * object, header, status or size asked for is a {@link BadReply} naming the endpoint.
 * Redirects are not followed (a 3xx is not what was asked). Every exchange has a TOTAL
 * deadline ({@link EXCHANGE_DEADLINE_MS}, an AbortController), so a service that drips one
 * byte at a time cannot hold the device: past it, {@link Unreachable}. Refusals: 4xx (and
 * 502/503/504) with their message as {@link ServiceError}, other 5xx as Unreachable.
 */
import { BadReply, ConfigError, DprecError, ServiceError, Unreachable } from "./errors.js";
import { type ProtocolInfo, decodeProtocolInfo } from "./wire/config.js";

/** Largest JSON reply read (a round's history included). */
export const MAX_JSON_BYTES = 8 << 20;
/** Largest artefact read when the caller does not know its exact size. */
export const MAX_ARTEFACT_BYTES = 1 << 30;
/** Bytes of an error reply read for its message. */
export const MAX_ERROR_BYTES = 64 << 10;
const MAX_ETAG = 256;
/** Milliseconds one exchange may take in all: connection, request and the whole reply. */
export const EXCHANGE_DEADLINE_MS = 120_000;

/** The fetch a client uses (the global one by default; tests and proxies may pass another). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface EndpointOptions {
  /** Milliseconds one exchange may take in all (default {@link EXCHANGE_DEADLINE_MS}). */
  deadlineMs?: number;
  fetch?: FetchLike;
}

/** A reply read under a cap. */
export class Reply {
  constructor(readonly status: number, readonly headers: Headers, readonly body: Uint8Array,
              readonly what: string) {}

  /** The body as a JSON object; {@link BadReply} if it is anything else. */
  json(): Record<string, unknown> {
    if (this.status < 200 || this.status >= 300) {
      throw new BadReply(`${this.what}: expected a 2xx reply, got ${this.status}`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(this.body));
    } catch (e) {
      throw new BadReply(`${this.what}: the reply is not JSON (${String(e)})`);
    }
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
      throw new BadReply(`${this.what}: the reply must be a JSON object, got ` +
        `${Array.isArray(doc) ? "an array" : doc === null ? "null" : typeof doc}`);
    }
    return doc as Record<string, unknown>;
  }
}

function errorMessage(body: Uint8Array): string {
  const text = new TextDecoder("utf-8").decode(body);
  try {
    const doc: unknown = JSON.parse(text);
    if (typeof doc === "object" && doc !== null && typeof (doc as { error?: unknown }).error === "string") {
      return ((doc as { error: string }).error).slice(0, 2000);
    }
  } catch { /* not JSON: the text itself */ }
  return text.slice(0, 200);
}

function refuse(status: number, message: string, retryAfter: string | null): never {
  if (status >= 500 && ![502, 503, 504].includes(status)) throw new Unreachable(`${status}: ${message}`);
  const after = (retryAfter ?? "").trim();
  throw new ServiceError(status, message, /^\d+$/.test(after) ? Number(after) : null);
}

function declared(headers: Headers, what: string): number | null {
  const value = headers.get("Content-Length");
  if (value === null) return null;
  if (!/^\s*\d+\s*$/.test(value)) {
    throw new BadReply(`${what}: Content-Length must be a byte count, got ${JSON.stringify(value.slice(0, 40))}`);
  }
  return Number(value);
}

interface FetchOptions {
  limit: number;
  expected?: number;
  expectedWhat?: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  deadlineMs: number;
  fetch: FetchLike;
}

/** Read `response`'s body up to `cap` bytes; `truncate`: keep the first `cap` (an error
 * body), else refuse a longer body. */
async function readCapped(response: Response, cap: number, truncate: boolean, what: string):
    Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  if (reader === undefined) return new Uint8Array(0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    if (size > cap) {
      await reader.cancel().catch(() => undefined);
      if (!truncate) throw new BadReply(`${what}: the reply is larger than the ${cap} bytes this request accepts`);
      break;
    }
  }
  const out = new Uint8Array(Math.min(size, cap));
  let off = 0;
  for (const c of chunks) {
    const take = Math.min(c.length, out.length - off);
    out.set(c.subarray(0, take), off);
    off += take;
    if (off === out.length) break;
  }
  return out;
}

/** Send a request and read its reply under a cap and a total deadline (module docstring). */
export async function fetchCapped(url: string, method: string, path: string, o: FetchOptions):
    Promise<Reply> {
  const what = `${method} ${path}`;
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => { expired = true; controller.abort(); }, o.deadlineMs);
  try {
    let response: Response;
    try {
      response = await o.fetch(url + path, {
        method, headers: { "Accept-Encoding": "identity", ...o.headers },
        body: o.body === undefined ? undefined : new Uint8Array(o.body), signal: controller.signal, redirect: "manual", cache: "no-store",
      });
    } catch (e) {
      throw new Unreachable(`${what}: ${String(e)}`);
    }
    const failed = response.status >= 400;
    const cap = failed ? MAX_ERROR_BYTES : o.limit;
    const encoding = (response.headers.get("Content-Encoding") ?? "identity").trim().toLowerCase();
    if (encoding !== "" && encoding !== "identity") {
      await response.body?.cancel().catch(() => undefined);
      throw new BadReply(`${what}: the body is encoded (${encoding.slice(0, 40)}), which was not asked for`);
    }
    const exact = response.status === 200 ? o.expected : undefined;
    const size = declared(response.headers, what);
    if (size !== null && !failed) {
      if (exact !== undefined && size !== exact) {
        await response.body?.cancel().catch(() => undefined);
        throw new BadReply(`${what}: the reply declares ${size} bytes, but ` +
          `${o.expectedWhat || "the reply"} is ${exact} bytes`);
      }
      if (size > cap) {
        await response.body?.cancel().catch(() => undefined);
        throw new BadReply(`${what}: the reply declares ${size} bytes, more than the ${cap} this request accepts`);
      }
    }
    let body: Uint8Array;
    try {
      body = await readCapped(response, cap, failed, what);
    } catch (e) {
      if (e instanceof BadReply) throw e;
      throw new Unreachable(`${what}: ${String(e)}`);
    }
    if (failed) refuse(response.status, errorMessage(body), response.headers.get("Retry-After"));
    if (exact !== undefined && body.length !== exact) {
      throw new BadReply(`${what}: the reply holds ${body.length} bytes, but ` +
        `${o.expectedWhat || "the reply"} is ${exact} bytes`);
    }
    return new Reply(response.status, response.headers, body, what);
  } catch (e) {
    if (expired && e instanceof Unreachable) {
      throw new Unreachable(`${what}: no complete reply within the exchange's deadline of ` +
        `${o.deadlineMs / 1000} s`);
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/** `fn()`, retried with backoff while the service is unreachable or asks to wait
 * (429/502/503/504), for up to `deadlineMs`; other refusals are thrown at once. */
export async function retrying<T>(fn: () => Promise<T>, deadlineMs = 60_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  let delay = 50;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      const transient = e instanceof Unreachable || (e instanceof ServiceError && e.transient);
      if (!transient || Date.now() > end) throw e;
      if (e instanceof ServiceError && e.retryAfter) delay = Math.max(delay, 1000 * e.retryAfter);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, Math.max(0, end - Date.now()))));
    delay = Math.min(1000, delay * 2);
  }
}

/** A fetched artefact: its bytes, version and ETag. */
export interface Artefact {
  readonly data: Uint8Array;
  readonly version: number;
  readonly etag: string;
}

function clientHeaders(clientId: number | bigint, token: string): Record<string, string> {
  const id = typeof clientId === "bigint" ? clientId : Number.isSafeInteger(clientId) ? BigInt(clientId) : null;
  if (id === null) throw new DprecError(`a client id must be an integer, got ${String(clientId)}`);
  if (typeof token !== "string" || !/^[\x21-\x7e]+$/.test(token)) {
    throw new DprecError("a client token must be printable ASCII without spaces");
  }
  return { Authorization: `Bearer ${token}`, "X-Dprec-Client": id.toString() };
}

/** One service's base URL; every exchange under the deadline. */
class Endpoint {
  readonly url: string;
  readonly deadlineMs: number;
  protected readonly fetchImpl: FetchLike;

  constructor(url: string, options: EndpointOptions = {}) {
    this.url = url.replace(/\/+$/, "");
    this.deadlineMs = options.deadlineMs ?? EXCHANGE_DEADLINE_MS;
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  protected exchange(method: string, path: string, o: Partial<FetchOptions> & { limit: number }):
      Promise<Reply> {
    return fetchCapped(this.url, method, path, { deadlineMs: this.deadlineMs, fetch: this.fetchImpl, ...o });
  }

  /** The current round, from `GET /v1/round`. */
  async round(): Promise<Record<string, unknown>> {
    return (await this.exchange("GET", "/v1/round", { limit: MAX_JSON_BYTES })).json();
  }
}

/** The server's public endpoints, with an ETag cache for artefacts. */
export class ServerAPI extends Endpoint {
  private readonly cache = new Map<string, Artefact>();
  /** Conditional fetches answered 304. */
  notModified = 0;

  /** The published description, its config decoded strictly ({@link BadReply} if malformed). */
  async protocol(): Promise<ProtocolInfo> {
    const doc = await this.protocolDoc();
    try {
      return decodeProtocolInfo(doc);
    } catch (e) {
      if (e instanceof ConfigError) throw new BadReply(`GET /v1/protocol: ${e.message}`);
      throw e;
    }
  }

  async protocolDoc(): Promise<Record<string, unknown>> {
    return (await this.exchange("GET", "/v1/protocol", { limit: MAX_JSON_BYTES })).json();
  }

  /** Artefact `name`, fetched only if it changed since the cached copy (ETag). `expected`:
   * its exact size in bytes (what N and the config imply); else at most `limit` bytes. */
  async artefact(name: string, options: { expected?: number; expectedWhat?: string; limit?: number } = {}):
      Promise<Artefact> {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new DprecError(`an artefact name, got ${JSON.stringify(name)}`);
    const { expected, expectedWhat = "", limit = MAX_ARTEFACT_BYTES } = options;
    let cached = this.cache.get(name);
    if (cached !== undefined && expected !== undefined && cached.data.length !== expected) cached = undefined;
    const path = `/v1/artefacts/${name}`;
    const r = await this.exchange("GET", path, {
      limit: expected ?? limit, expected, expectedWhat,
      headers: cached ? { "If-None-Match": cached.etag } : {},
    });
    if (r.status === 304 && cached !== undefined) {
      this.notModified++;
      return cached;
    }
    if (r.status !== 200) throw new BadReply(`${r.what}: expected 200 or 304, got ${r.status}`);
    const version = r.headers.get("X-Dprec-Version") ?? "";
    const etag = r.headers.get("ETag") ?? "";
    if (!/^\s*\d+\s*$/.test(version)) {
      throw new BadReply(`${r.what}: X-Dprec-Version must be a version number, got ${JSON.stringify(version.slice(0, 40))}`);
    }
    if (!(etag.length > 0 && etag.length <= MAX_ETAG)) {
      throw new BadReply(`${r.what}: ETag must be 1-${MAX_ETAG} characters, got ${etag.length}`);
    }
    const art = { data: r.body, version: Number(version), etag };
    this.cache.set(name, art);
    return art;
  }

  cached(name: string): Artefact | undefined {
    return this.cache.get(name);
  }
}

/** The proxy's client endpoints: one message per client and round. */
export class ProxyAPI extends Endpoint {
  /** What the proxy hands the authenticated client alone (e.g. FMF-LDP's cells token),
   * from `GET /v1/client/secret`; {@link ServiceError} on a refusal. */
  async clientSecret(clientId: number | bigint, token: string): Promise<Record<string, unknown>> {
    return (await this.exchange("GET", "/v1/client/secret", {
      limit: MAX_JSON_BYTES, headers: clientHeaders(clientId, token) })).json();
  }

  /** Submit `body` (one client's message) for `round`; {@link ServiceError} on a refusal (409
   * for a second submission in the round), {@link Unreachable} if no answer came (then send
   * the same bytes again, and read a 409 on that retry as accepted). */
  async submit(round: number, clientId: number | bigint, token: string, body: Uint8Array):
      Promise<Record<string, unknown>> {
    if (!Number.isSafeInteger(round) || round < 0) throw new DprecError(`a round is an integer >= 0, got ${round}`);
    return (await this.exchange("POST", `/v1/rounds/${round}/reports`, {
      limit: MAX_JSON_BYTES, body,
      headers: { ...clientHeaders(clientId, token), "Content-Type": "application/octet-stream" },
    })).json();
  }
}
