/**
 * The two SDK pieces the demo waits for, until their branches land: the HTTP endpoints
 * (jscore's http.ts: ServerApi, ProxyApi over fetch) and dp-pop's device step and scores
 * (jsprio's systems/dp_pop.ts as a SystemSteps). Each factory throws {@link SdkMissing};
 * replaced by imports of the SDK's own once merged.
 */
import type { ProxyApi, ServerApi, SystemSteps } from "../src/device.js";

export class SdkMissing extends Error {
  constructor(what: string) {
    super(`${what} needs the TypeScript SDK's device client (clients/js/src), not merged yet`);
    this.name = "SdkMissing";
  }
}

export function httpServer(_url: string): ServerApi {
  throw new SdkMissing("the server's HTTP endpoints");
}

export function httpProxy(_url: string): ProxyApi {
  throw new SdkMissing("the proxy's HTTP endpoints");
}

export function dpPopSteps(): SystemSteps {
  throw new SdkMissing("dp-pop's device step");
}

/** The released counts and their contributors, decoded from the `model` artefact's bytes. */
export function decodePopularity(_bytes: Uint8Array): { counts: ArrayLike<number>; contributors: number } {
  throw new SdkMissing("reading the released counts");
}
