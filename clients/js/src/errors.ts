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
