/** Prio3's refusals (Python: dprec.protocol.secure_sum.errors.InvalidProofError). */
import { SecureSumError } from "../errors.js";

/** A proof failed its check, or the joint randomness does not match: refuse the report. */
export class InvalidProofError extends SecureSumError {}
