/** dprec's device SDK: the public entry point (modules re-exported as they land). Browser-safe:
 * the Node file ledger is in "./node.js" (package subpath `@dprec/device/node`). The wire
 * format's version is wire/header.ts's VERSION (exported below). */
export * from "./errors.js";
export * from "./random.js";
export * from "./description.js";
export * from "./terms.js";
export * from "./policy.js";
export * from "./selection.js";
export * from "./ledger/index.js";
export * from "./device.js";
export * from "./seal.js";
export * from "./wire/index.js";
export * from "./systems/index.js";
export * from "./http.js";
export * from "./steps.js";
export * from "./systems/dp_pop.js";
export { ContributionCheck, dpPopCheck, type DpPopTerms } from "./prio3/contribution.js";
export { proveAndSeal, provedUploadBytes, SUM_UPLOAD_KIND } from "./secure_sum/proved.js";
export { decodePopularity, dpPopShape, type PopularityModel } from "./systems/dp_pop_model.js";
export { dpPopSteps, type Calibrate, type DpPopCalibration, type DpPopStepOptions } from "./systems/dp_pop_steps.js";
