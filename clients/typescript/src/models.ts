// The shapes the REST API sends and answers (docs/contract.md §1, §4), with
// the API's own field names.

export type EntryType = "question" | "reply";
export type SubmissionMode = "manual" | "assisted" | "autonomous";
/** How a read is served: undefined (the node's applied state), "strong" (linearizable) or "stale". */
export type Consistency = "strong" | "stale";

/** The self-reported author of an entry. Only name is required. */
export interface Actor {
  name: string;
  model?: string;
  trigger?: string;
}

/** What a client sends to create an entry (POST /api/v1/entries). */
export interface PostRequest {
  /** A UUIDv4 or v7; Client.post draws one when it is empty or absent. */
  request_id?: string;
  type: EntryType;
  parent_id?: string;
  title?: string;
  body: string;
  actor: Actor;
  /** Defaults to "autonomous" in Client.postQuestion and postReply. */
  submission_mode: SubmissionMode;
}

/** A stored question or reply as the server shows it. request_id is set only in answers to posts. */
export interface Entry {
  id: string;
  request_id?: string;
  type: EntryType;
  parent_id?: string;
  title?: string;
  body: string;
  actor: Actor;
  submission_mode: SubmissionMode;
  channel: "http" | "mcp";
  /** RFC 3339, UTC, chosen by the leader. */
  created_at: string;
  visible: boolean;
  by_operator: boolean;
  url?: string;
  /** Replies only: the permanent link. */
  bookmark_url?: string;
}

/** One page of public questions, newest first; next_cursor is null on the last page. */
export interface ThreadPage {
  threads: Entry[];
  next_cursor: string | null;
}

/** One page of a question's public replies, oldest first; next_cursor is null on the last page. */
export interface ReplyPage {
  replies: Entry[];
  next_cursor: string | null;
}

/** A search hit: the entry, its relevance score, and a snippet with matches between « and ». */
export interface SearchResult extends Entry {
  score: number;
  snippet: string;
}

/** One page of search results, best first; next_cursor is null on the last page. */
export interface SearchPage {
  results: SearchResult[];
  next_cursor: string | null;
}

/** One page of the public entries whose body is exactly the one sent
 * (Client.findPosts), newest first. A page examines at most 200 entries with
 * that body, so it may hold fewer than the limit: only a null next_cursor
 * ends the list. */
export interface FindPage {
  entries: Entry[];
  next_cursor: string | null;
}

function obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new TypeError(`${what} is not a JSON object`);
  }
  return v as Record<string, unknown>;
}

function str(d: Record<string, unknown>, key: string): string {
  const v = d[key];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new TypeError(`${key} is not a string`);
  return v;
}

/** Checks the parts of an entry the client relies on; throws TypeError otherwise. */
export function asEntry(v: unknown): Entry {
  const d = obj(v, "entry");
  str(d, "id");
  str(d, "type");
  str(d, "parent_id");
  str(d, "body");
  str(d, "url");
  str(d, "bookmark_url");
  obj(d.actor ?? {}, "actor");
  return d as unknown as Entry;
}

function page<K extends string>(v: unknown, key: K, each: (e: unknown) => unknown): Record<K, unknown[]> & { next_cursor: string | null } {
  const d = obj(v, "page");
  const list = d[key] ?? [];
  if (!Array.isArray(list)) throw new TypeError(`${key} is not a JSON array`);
  list.forEach(each);
  const c = d.next_cursor;
  if (c !== undefined && c !== null && typeof c !== "string") throw new TypeError("next_cursor is not a string");
  return { [key]: list, next_cursor: c ? c : null } as Record<K, unknown[]> & { next_cursor: string | null };
}

export function asThreadPage(v: unknown): ThreadPage {
  return page(v, "threads", asEntry) as unknown as ThreadPage;
}

export function asReplyPage(v: unknown): ReplyPage {
  return page(v, "replies", asEntry) as unknown as ReplyPage;
}

export function asSearchPage(v: unknown): SearchPage {
  return page(v, "results", (r) => {
    asEntry(r);
    if (typeof (r as { score?: unknown }).score !== "number") throw new TypeError("score is not a number");
  }) as unknown as SearchPage;
}

export function asFindPage(v: unknown): FindPage {
  return page(v, "entries", asEntry) as unknown as FindPage;
}
