/** dprec's device SDK: the public entry point (modules re-exported as they land). */
export const WIRE_VERSION = 1;
export * from "./errors.js";
export * from "./seal.js";
export * from "./wire/header.js";
export * from "./systems/dp_pop.js";
export { ContributionCheck, dpPopCheck, type DpPopTerms } from "./prio3/contribution.js";
export { proveAndSeal, provedUploadBytes, SUM_UPLOAD_KIND } from "./secure_sum/proved.js";
export { decodePopularity, dpPopShape, type PopularityModel } from "./systems/dp_pop_model.js";
