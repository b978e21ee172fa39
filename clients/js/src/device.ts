/**
 * One user's device in a deployed protocol (Python: dprec.client.device.DeviceClient): it
 * reads the server's description under its own {@link DevicePolicy}, keeps the user's
 * {@link Ledger}, runs its system's step ({@link SystemSteps}: jscore's dplcf-sp and fmf-ldp,
 * jsprio's dp-pop) on the user's history with a {@link SecureSource}, submits through the
 * proxy with its token, and ranks items on the device.
 *
 * Order of a report, so that no message is ever sent uncharged, a crash never under-charges
 * the ledger, and no round of a run ever gets two different messages (steps 2 to 4 hold the
 * ledger's lock, the state re-read under it, so two tabs or processes decide one at a time):
 *
 * 1. read the description under the policy (mechanism, noise, sizes) and pin its run:
 *    every refusal happens here, before anything is computed;
 * 2. if a message for (run, round) is stored, that message is the report (a re-send, bit
 *    for bit: after a crash, a timeout, or a server that restarted the round);
 * 3. else check the budget, build the message and store it;
 * 4. charge (run, round) in the ledger (once per key), then submit.
 *
 * Before step 2 the device awaits libsodium's `ready()` itself (a step may seal: the
 * embedding application need not load it). A 409 "already submitted" on a re-send means the
 * first one had arrived. A secure sum's run
 * is charged its epsilon once, at its first upload; its later rounds are charged 0. A step
 * may answer null (this client takes no part in the round): nothing is charged, stored or
 * sent.
 */
import { parseDescription, reportKey, protocolRunId, type ProtocolDescription } from "./description.js";
import { BadReply, BudgetExceededError, DprecError, PolicyViolation, RunChanged } from "./errors.js";
import type { Ledger } from "./ledger/ledger.js";
import { DevicePolicy } from "./policy.js";
import { SecureSource } from "./random.js";
import { ready } from "./seal.js";
import { topK } from "./selection.js";
import { checkHistory, type History } from "./systems/history.js";
import { uploadBytes, type DeviceReader, type ProtocolTerms, type TermsFields } from "./terms.js";

/** The server's endpoints a device uses: http.ts's {@link ServerAPI} is one. */
export interface ServerApi {
  /** `GET /v1/protocol`: the description's JSON (decoded strictly here). */
  protocolDoc(): Promise<unknown>;
  /** `GET /v1/artefacts/<name>`: of exactly `expected` bytes, or at most `limit`. */
  artefact(name: string, options: { expected?: number; expectedWhat?: string; limit?: number }):
    Promise<{ readonly data: Uint8Array }>;
}

/** The proxy's endpoints a device uses: http.ts's {@link ProxyAPI} is one. */
export interface ProxyApi {
  /** `GET /v1/round`: `{started, finished, round, published?}`. */
  round(): Promise<unknown>;
  /** `POST` the report; rejects with an error carrying `status` (409: already submitted). */
  submit(round: number, clientId: number, token: string, body: Uint8Array): Promise<unknown>;
  /** What the proxy hands this client alone (FMF-LDP's cells token). */
  clientSecret(clientId: number, token: string): Promise<unknown>;
}

/** What a system's step gets for one report. */
export interface StepContext {
  readonly terms: ProtocolTerms;
  readonly history: History;
  readonly round: number;
  readonly rng: SecureSource;
  readonly clientId: number;
  /** The artefact's bytes, of the size the terms imply (checked here). */
  artefact(): Promise<Uint8Array>;
  /** The proxy's secret for this client (fetched once). */
  clientSecret(): Promise<unknown>;
  /** What the proxy publishes (`GET /v1/round`'s `published`: a secure sum's key, check). */
  proxyPublished(): Promise<Readonly<Record<string, unknown>>>;
}

/** A system's device half, plugged in by the system's module. */
export interface SystemSteps {
  /** The family it serves (`dplcf`, `fmf`, `dp_pop`). */
  readonly family: string;
  /** The terms of a description of its family (terms.ts's readers). */
  terms(read: DeviceReader, info: ProtocolDescription): TermsFields;
  /** The message of one report, null to take no part in the round. */
  build(context: StepContext): Promise<Uint8Array | null>;
  /** Whether every upload has exactly its round's size (default true). */
  readonly exactUpload?: boolean;
  /** Every item's score for the user, from the artefact's bytes. */
  scores?(terms: ProtocolTerms, history: History, artefact: Uint8Array): Promise<ArrayLike<number>>;
}

/** Why a report was or was not sent. */
export type ReportStatus = "sent" | "resent" | "budget" | "no-round" | "not-selected" | "lost";

/** What a report did: the round, what left the device (its size) and what it cost. */
export interface ReportOutcome {
  readonly status: ReportStatus;
  readonly round: number | null;
  /** Bytes sent (0 when nothing was). */
  readonly bytes: number;
  /** Epsilon charged by this call (0 for a re-send or nothing sent). */
  readonly epsilon: number;
  readonly run: string;
}

/** How a device is made: its id and token, the services, its ledger, policy and steps. */
export interface DeviceOptions {
  clientId: number;
  token: string;
  server: ServerApi;
  proxy: ProxyApi;
  ledger: Ledger;
  steps: readonly SystemSteps[];
  policy?: DevicePolicy;
  random?: SecureSource;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** One user (module doc). */
export class DeviceClient {
  readonly clientId: number;
  readonly policy: DevicePolicy;
  readonly ledger: Ledger;
  private readonly token: string;
  private readonly server: ServerApi;
  private readonly proxy: ProxyApi;
  private readonly steps: ReadonlyMap<string, SystemSteps>;
  private readonly random: SecureSource;
  private secret: unknown = undefined;

  constructor(options: DeviceOptions) {
    if (!Number.isSafeInteger(options.clientId) || options.clientId < 0) {
      throw new DprecError(`clientId must be an integer >= 0, got ${options.clientId}`);
    }
    this.clientId = options.clientId;
    this.token = options.token;
    this.server = options.server;
    this.proxy = options.proxy;
    this.ledger = options.ledger;
    this.policy = options.policy ?? new DevicePolicy();
    this.random = options.random ?? new SecureSource();
    this.steps = new Map(options.steps.map((s) => [s.family, s]));
  }

  /** Fetch the description and read it under the policy: the terms, the run and the steps;
   * BadReply or PolicyViolation (nothing computed). */
  async describe(): Promise<{ info: ProtocolDescription; terms: ProtocolTerms; steps: SystemSteps; run: string }> {
    const info = parseDescription(await this.server.protocolDoc());
    const steps = this.steps.get(info.family);
    if (steps === undefined) {
      throw new PolicyViolation(`the protocol's family ${info.family} (${info.system}) is not ` +
        `one this device runs: ${[...this.steps.keys()].join(", ") || "none"}`);
    }
    const terms = this.policy.read(info, (read, i) => steps.terms(read, i));
    return { info, terms, steps, run: protocolRunId(info) };
  }

  /** Pin the run the server describes now (after RunChanged), if the policy accepts it; the
   * ledger keeps every charge, so the budget spans the runs. */
  async joinNewRun(): Promise<string> {
    const { terms, run } = await this.describe();
    this.policy.cost(terms);
    await this.ledger.locked((view) => view.pin(run));
    return run;
  }

  /** Take part in the open round with `history` (module doc's order). Throws
   * PolicyViolation, RunChanged, BadReply or a DprecError for a malformed history before
   * anything is computed. */
  async report(history: History): Promise<ReportOutcome> {
    const { terms, steps, run } = await this.describe();
    let cost = this.policy.cost(terms);
    checkHistory(history, terms.nItems); // refused before anything is computed
    await this.ledger.locked(async (view) => {
      const pinned = view.pinned();
      if (pinned === null) await view.pin(run);
      else if (pinned !== run) {
        throw new RunChanged(`the server now describes run ${run.slice(0, 16)}... ` +
          `(${terms.system}, ${terms.nItems} items), but this device is pinned to run ` +
          `${pinned.slice(0, 16)}...; it reports to another run only after joinNewRun() ` +
          "(every report there is charged anew)");
      }
    });
    const round = await this.openRound(terms);
    const none = (status: ReportStatus): ReportOutcome =>
      ({ status, round, bytes: 0, epsilon: 0, run });
    if (round === null) return none("no-round");
    const key = reportKey(run, round);
    await ready(); // libsodium's WebAssembly: a step may seal (no caller has to remember it)
    const decided = await this.ledger.locked(async (view) => {
      let body = await view.message(run, round);
      const resend = body !== null && view.charged(key);
      if (body === null) {
        if (view.charged(key)) return "lost" as const;
        if (terms.secureSum && view.countUnder(`${run}/`) > 0) cost = 0;
        if (!view.canCharge(cost)) return "budget" as const;
        body = await steps.build(this.context(terms, history, round));
        if (body === null) return "not-selected" as const;
        checkSize(body, terms, round, steps.exactUpload ?? true);
        await view.storeMessage(run, round, body);
      } else {
        checkSize(body, terms, round, steps.exactUpload ?? true);
      }
      try {
        await view.charge(key, cost);
      } catch (e) {
        if (e instanceof BudgetExceededError) return "budget" as const;
        throw e;
      }
      return { body, resend };
    });
    if (typeof decided === "string") return none(decided);
    const { body, resend } = decided;
    try {
      await this.proxy.submit(round, this.clientId, this.token, body);
    } catch (e) {
      const status = (e as { status?: unknown }).status;
      if (!(status === 409 && resend && String((e as Error).message).includes("already submitted"))) {
        throw e;
      }
    }
    return { status: resend ? "resent" : "sent", round, bytes: body.length,
             epsilon: resend ? 0 : cost, run };
  }

  private context(terms: ProtocolTerms, history: History, round: number): StepContext {
    return {
      terms, history, round, rng: this.random, clientId: this.clientId,
      artefact: () => this.artefactBytes(terms),
      clientSecret: async () => {
        if (this.secret === undefined) {
          const doc = await this.proxy.clientSecret(this.clientId, this.token);
          if (!isObject(doc)) throw new BadReply("the proxy's client secret must be a JSON object");
          this.secret = doc;
        }
        return this.secret;
      },
      proxyPublished: async () => {
        const state = await this.proxy.round();
        const published = isObject(state) ? state["published"] : undefined;
        if (!isObject(published)) throw new BadReply("GET /v1/round: no published object");
        return published;
      },
    };
  }

  /** The protocol's artefact, of the exact size the terms imply (at most, for a secure sum's
   * model); BadReply otherwise. */
  private async artefactBytes(terms: ProtocolTerms): Promise<Uint8Array> {
    const { data: body } = await this.server.artefact(terms.artefact, terms.artefactExact
      ? { expected: terms.artefactBytes, expectedWhat: terms.artefactWhat }
      : { limit: terms.artefactBytes });
    if (body.length > terms.artefactBytes
        || (terms.artefactExact && body.length !== terms.artefactBytes)) {
      throw new BadReply(`GET /v1/artefacts/${terms.artefact}: ${body.length} bytes, expected ` +
        `${terms.artefactExact ? "" : "at most "}${terms.artefactBytes} (${terms.artefactWhat})`);
    }
    return body;
  }

  /** The proxy's open round, null if none is open; BadReply if malformed. */
  private async openRound(terms: ProtocolTerms): Promise<number | null> {
    const state = await this.proxy.round();
    if (!isObject(state)) throw new BadReply("the proxy's round state must be a JSON object");
    const { started, finished, round } = state;
    if (typeof started !== "boolean" || typeof finished !== "boolean") {
      throw new BadReply("the proxy's round state must have booleans started and finished, got " +
        `${JSON.stringify(started)}, ${JSON.stringify(finished)}`);
    }
    if (finished || !started) return null;
    if (typeof round !== "number" || !Number.isInteger(round) || round < 0 || round >= terms.rounds) {
      throw new BadReply(`the proxy's open round must be an integer in [0, ${terms.rounds}) for ` +
        `${terms.system}, got ${JSON.stringify(round)}`);
    }
    return round;
  }

  /** Every item's score for this user, computed here from the broadcast. */
  async scores(history: History): Promise<ArrayLike<number>> {
    const { terms, steps } = await this.describe();
    if (steps.scores === undefined) {
      throw new DprecError(`${terms.system} has no on-device scores in this SDK`);
    }
    checkHistory(history, terms.nItems);
    return steps.scores(terms, history, await this.artefactBytes(terms));
  }

  /** The `k` best items for this user, best first, never leaving the device. */
  async recommend(history: History, k = 10, excludeSeen = true): Promise<number[]> {
    return recommend(await this.scores(history), history, k, excludeSeen);
  }
}

/** The `k` best items by `scores` (seen ones last with `excludeSeen`); ties: the larger
 * score, then the smaller item id (dprec.selection). */
export function recommend(scores: ArrayLike<number>, history: History, k: number,
                          excludeSeen = true): number[] {
  const s = Float64Array.from(scores);
  if (excludeSeen) {
    for (let j = 0; j < history.items.length; j++) {
      const i = history.items[j] as number;
      if (i >= 0 && i < s.length) s[i] = -Infinity;
    }
  }
  return topK(s, k);
}

function checkSize(body: Uint8Array, terms: ProtocolTerms, round: number, exact: boolean): void {
  const want = uploadBytes(terms, round);
  if (!(body instanceof Uint8Array) || body.length > want || (exact && body.length !== want)) {
    throw new DprecError(`the message of round ${round} is ${body.length} bytes, expected ` +
      `${exact ? "" : "at most "}${want}: refusing to send it`);
  }
}
