/**
 * The SDK's refusals: every error is a {@link DprecError} whose message names what was wrong
 * (the field, the rule, the value) and what to do, mirroring the Python SDK's classes
 * (dprec.errors, dprec.client.errors, dprec.protocol.messages, dprec.protocol.secure_sum.errors).
 */

/** Base of every refusal of the SDK (Python: dprec.errors.DprecError). */
export class DprecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A message's bytes or content are not valid (Python: dprec.protocol.messages.MessageError). */
export class MessageError extends DprecError {}

/** A protocol description (ProtocolInfo's typed config) is malformed: names the field. */
export class ConfigError extends DprecError {}

/** A service answered something malformed, or not what was asked (Python: client.errors.BadReply). */
export class BadReply extends DprecError {}

/** A secure-sum step refused its input (Python: secure_sum.errors.SecureSumError). */
export class SecureSumError extends DprecError {}

/** A sealed box could not be opened. */
export class SealedBoxError extends SecureSumError {}

/** The box was sealed to another public key than the one trying to open it. */
export class WrongRecipientError extends SealedBoxError {}

/** The AEAD tag does not verify: the box or its associated data changed. */
export class TamperedCiphertextError extends SealedBoxError {}

/** An upload, key or box does not have the protocol's format or length. */
export class MalformedUploadError extends SecureSumError {}

/**
 * A well-formed protocol the device's own policy does not accept (a mechanism, an epsilon, a
 * size): nothing was computed or sent (Python: dprec.client.errors.PolicyViolation).
 */
export class PolicyViolation extends DprecError {}

/**
 * The server describes another protocol run than the one the device is pinned to; the device
 * reports to it only after `joinNewRun()` (Python: dprec.client.errors.RunChanged).
 */
export class RunChanged extends DprecError {}

/** A charge would pass the ledger's budget; nothing changed (Python: BudgetExceededError). */
export class BudgetExceededError extends DprecError {}

/**
 * The stored ledger is unreadable, inconsistent or hostile: refused, never reset (a reset
 * would refund the budget). Names the store and what is wrong.
 */
export class LedgerError extends DprecError {}

/** A service refused a request: `status` and its `{"error": ...}` message
 * (Python: client.http.ServiceError). */
export class ServiceError extends DprecError {
  constructor(readonly status: number, readonly detail: string,
              readonly retryAfter: number | null = null) {
    super(`${status}: ${detail}`);
  }

  /** Worth retrying: rate limited or a service unreachable behind the one asked. */
  get transient(): boolean {
    return [429, 502, 503, 504].includes(this.status);
  }
}

/** No answer: connection refused or reset, past the exchange's deadline, or a 5xx without a
 * message (Python: client.http.Unreachable). */
export class Unreachable extends DprecError {}
