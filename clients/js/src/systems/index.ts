/** The device steps of dplcf-sp and fmf-ldp, and the randomness they draw. */
export * from "./random_source.js";
export * from "./history.js";
export * from "./dplcf_sp.js";
export * from "./fmf_cells.js";
export * from "./fmf_ldp.js";
export * from "./scores.js";
