// How a post ended: the Go client's outcomes (client/outcome.go), by the same names.

/**
 * The outcome of Client.post. Only "unconfirmed" is not final: the post stays
 * pending in the journal and Client.resume finishes it.
 *
 * - confirmed: stored (201, or 200 with replayed: true) and read back by its
 *   id; an entry the server reports hidden cannot be read back publicly and is
 *   confirmed with hidden set.
 * - unconfirmed: no answer established the entry as stored and read back
 *   (lost answers, 429 or 503 until the budget ran out, writes disabled, a
 *   failed read-back). It may or may not exist: resume it.
 * - conflict: the request_id is stored (409) or journaled with different content.
 * - deleted: stored and later deleted by an operator (410); not re-created.
 * - rejected: refused for what it is (invalid content, a missing or
 *   non-question parent, any other 4xx); not stored.
 */
export type Outcome = "confirmed" | "unconfirmed" | "conflict" | "deleted" | "rejected";

export const OUTCOMES: readonly Outcome[] = ["confirmed", "unconfirmed", "conflict", "deleted", "rejected"];

/** Every outcome but "unconfirmed" ends the post. */
export function isFinal(o: Outcome): boolean {
  return o !== "unconfirmed";
}

/** The report of one post, in the journal's (and the Go client's) JSON form. */
export interface Result {
  outcome: Outcome;
  request_id: string;
  /** The server's, known once an answer said the entry is stored (an unconfirmed result may carry them). */
  id: string;
  url: string;
  bookmark_url: string;
  /** Why the outcome is not a plain confirmation, or a note about it. */
  reason: string;
  /** The server answered visible: false (an operator hid it or its question). */
  hidden?: boolean;
  /** The last error code the server answered, if any. */
  code?: string;
  /** The post requests sent (or tried). */
  attempts: number;
  /** The answer that stored it was a replay (200, replayed: true): an earlier
   * attempt, whose answer was lost, had stored it. */
  replayed?: boolean;
}
