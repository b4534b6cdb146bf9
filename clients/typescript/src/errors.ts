// Errors the client throws. A post never throws for the server's answer:
// its Result says how it ended; only a journal that cannot record throws.

/** A definite error answer: {"error": {"code", "message"}} with its HTTP status.
 * code is "" when something other than a rest.area node answered (a proxy);
 * retryAfterMs is the Retry-After delay (0 when absent). */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    readonly detail: string,
    readonly status: number = 0,
    readonly retryAfterMs: number = 0,
  ) {
    super(`${code || "error"}: ${detail}`);
    this.name = "ApiError";
  }
}

/** A read gave up without a definite answer: lost answers, 429 or 503 until
 * the client's attempts or deadline ran out. Reading again may work. */
export class ReadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReadError";
  }
}

/** The journal could not be read or written. When Client.post throws it, nothing was sent. */
export class JournalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JournalError";
  }
}

/** The journal already holds different content for this request_id: a retry
 * must send the original content (docs/contract.md §7, step 4). */
export class JournalConflictError extends JournalError {
  constructor() {
    super("the journal holds different content for this request_id");
    this.name = "JournalConflictError";
  }
}
