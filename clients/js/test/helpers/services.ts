/** Stand-ins for the server and the proxy (the device's view of them), and system steps that
 * build a message of the right size from the device's randomness. */
import type { ProxyApi, ServerApi, StepContext, SystemSteps } from "../../src/device.js";
import { ServiceError } from "../../src/errors.js";
import { dplcfTerms, uploadBytes, type DeviceReader, type TermsFields } from "../../src/terms.js";
import type { ProtocolDescription } from "../../src/description.js";

export class FakeServer implements ServerApi {
  artefactCalls = 0;
  artefactSize: number | null = null;
  constructor(public doc: Record<string, unknown>) {}
  async protocolDoc(): Promise<unknown> { return structuredClone(this.doc); }
  async artefact(name: string, o: { expected?: number; limit?: number }): Promise<{ data: Uint8Array }> {
    this.artefactCalls += 1;
    return { data: new Uint8Array(this.artefactSize ?? o.expected ?? o.limit ?? 0) };
  }
}

export class FakeProxy implements ProxyApi {
  state: Record<string, unknown> = { started: true, finished: false, round: 0, published: {} };
  readonly received: Array<{ round: number; clientId: number; body: Uint8Array }> = [];
  attempts: Uint8Array[] = [];
  failNext = 0;
  async round(): Promise<unknown> { return structuredClone(this.state); }
  async submit(round: number, clientId: number, token: string, body: Uint8Array): Promise<void> {
    this.attempts.push(Uint8Array.from(body));
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error("network down");
    }
    if (token !== "secret-token") throw new ServiceError(401, "bad token");
    if (this.received.some((r) => r.round === round && r.clientId === clientId)) {
      throw new ServiceError(409, `client ${clientId} already submitted in round ${round}`);
    }
    this.received.push({ round, clientId, body: Uint8Array.from(body) });
  }
  async clientSecret(): Promise<unknown> { return { cells_token: "00".repeat(32) }; }
}

/** Steps of `family` whose message is random bytes of the round's exact size. */
export class RandomSteps implements SystemSteps {
  builds = 0;
  answer: "message" | "none" | "short" | "artefact" = "message";
  constructor(readonly family: string,
              readonly readTerms: (r: DeviceReader, i: ProtocolDescription) => TermsFields = dplcfTerms) {}
  terms(read: DeviceReader, info: ProtocolDescription): TermsFields { return this.readTerms(read, info); }
  async build(c: StepContext): Promise<Uint8Array | null> {
    this.builds += 1;
    if (this.answer === "none") return null;
    if (this.answer === "artefact") await c.artefact();
    const size = uploadBytes(c.terms, c.round);
    return c.rng.bytes(this.answer === "short" ? size - 1 : size);
  }
  async scores(): Promise<ArrayLike<number>> { return [0.5, 3, 3, Number.NaN, 2, 3]; }
}
