/**
 * The SDK pieces the demo waits for, until they land: dp-pop as a {@link SystemSteps} of the
 * DeviceClient (its terms with the round's calibration, mu per share, computed on the device
 * from the config; then systems/dp_pop.ts's buildDpPopUpload, which is merged) and the
 * decoder of its released `model` artefact. Each throws {@link SdkMissing}; replaced by
 * imports of the SDK's own once merged.
 */
import type { SystemSteps } from "../src/device.js";

export class SdkMissing extends Error {
  constructor(what: string) {
    super(`${what} needs the TypeScript SDK's device client (clients/js/src), not merged yet`);
    this.name = "SdkMissing";
  }
}

export function dpPopSteps(): SystemSteps {
  throw new SdkMissing("dp-pop's device step");
}

/** The released counts and their contributors, decoded from the `model` artefact's bytes. */
export function decodePopularity(_bytes: Uint8Array): { counts: ArrayLike<number>; contributors: number } {
  throw new SdkMissing("reading the released counts");
}
