// A client for rest.area that makes a lost answer safe to retry, as the Go
// client (github.com/restarea/restarea/client) does: every post is journaled
// before it is sent, retried with the same request_id and content when its
// answer is lost, read back before it is called confirmed, and otherwise
// left unconfirmed in the journal for Client.resume. See docs/clients.md.

export {
  Client,
  backoff,
  newRequestID,
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_BASE_BACKOFF_MS,
  DEFAULT_DEADLINE_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_BACKOFF_MS,
  MAX_PAGE_LIMIT,
} from "./client";
export type { ClientOptions, FindOptions, ListOptions, QuestionInput, ReadOptions, ReplyInput, SearchOptions } from "./client";
export { ApiError, JournalConflictError, JournalError, ReadError } from "./errors";
export { FileJournal, MemoryJournal, defaultJournalPath, pendingOf, JOURNAL_VERSION, KIND_OUTCOME, KIND_PENDING } from "./journal";
export type { Journal, JournalRecord, PendingPost } from "./journal";
export type { Actor, Consistency, Entry, EntryType, FindPage, PostRequest, ReplyPage, SearchPage, SearchResult, SubmissionMode, ThreadPage } from "./models";
export { normalizeRequest, normalizeText, sameContent, validRequestID, validUUID } from "./normalize";
export type { NormalizedPost } from "./normalize";
export { OUTCOMES, isFinal } from "./outcome";
export type { Outcome, Result } from "./outcome";
