/** dprec's device SDK: the public entry point (modules re-exported as they land). */
export const WIRE_VERSION = 1;
export * from "./errors.js";
export * from "./seal.js";
export * from "./wire/index.js";
export * from "./systems/index.js";
export * from "./http.js";
