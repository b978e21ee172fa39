/** The device steps of dplcf-sp and fmf-ldp (their randomness: random.ts's SecureSource). */
export * from "./history.js";
export * from "./dplcf_sp.js";
export * from "./fmf_cells.js";
export * from "./fmf_ldp.js";
export * from "./scores.js";
