/** dprec's device SDK: the public entry point (modules re-exported as they land). */
export const WIRE_VERSION = 1;
