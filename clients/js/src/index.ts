/** dprec's device SDK: the public entry point (modules re-exported as they land). Browser-safe:
 * the Node file ledger is in "./node.js" (package subpath `@dprec/device/node`). */
export const WIRE_VERSION = 1;
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
