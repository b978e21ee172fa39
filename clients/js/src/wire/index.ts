/** The wire formats: the framing, the message kinds of the device systems, their decoders. */
export * from "./header.js";
export * from "./fields.js";
export * from "./reports.js";
export * from "./item_matrix.js";
export * from "./dplcf.js";
export * from "./any.js";
export * from "./config.js";
