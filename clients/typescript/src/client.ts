// The client: posts that survive a lost answer, and reads.

import { randomUUID } from "node:crypto";

import { ApiError, JournalConflictError, JournalError, ReadError } from "./errors";
import { send, type Answer } from "./http";
import type { Journal, PendingPost } from "./journal";
import {
  asEntry,
  asFindPage,
  asReplyPage,
  asSearchPage,
  asThreadPage,
  type Actor,
  type Consistency,
  type Entry,
  type FindPage,
  type PostRequest,
  type ReplyPage,
  type SearchPage,
  type SubmissionMode,
  type ThreadPage,
} from "./models";
import { normalizeRequest, type NormalizedPost } from "./normalize";
import type { Result } from "./outcome";

export const DEFAULT_MAX_ATTEMPTS = 8;
export const DEFAULT_DEADLINE_MS = 120_000;
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 20_000;
export const DEFAULT_BASE_BACKOFF_MS = 250;
export const DEFAULT_MAX_BACKOFF_MS = 8_000;
export const MAX_PAGE_LIMIT = 200;

/** Options of a Client. Absent values take the defaults above. */
export interface ClientOptions {
  /** Base URLs of cluster nodes ("http://host:port"), tried in turn: the
   * client moves to the next when the current one cannot be reached. An
   * array, or one comma-separated string. At least one is required. */
  servers: string[] | string;
  /** Records every post before it is sent. post and resume refuse to run
   * without one (a client that cannot remember what it sent cannot retry
   * it safely); reads do not need it. */
  journal?: Journal;
  /** Bounds the post requests of one post, and separately the requests of
   * one read (or one read-back page). */
  maxAttempts?: number;
  /** Bounds one post (sending, waiting, reading back) and one read. */
  deadlineMs?: number;
  /** Bounds one HTTP request; past it the answer counts as lost. */
  attemptTimeoutMs?: number;
  /** Shape the exponential backoff (with jitter) after a lost answer or a 503 without Retry-After. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Keep retrying through 503 writes_disabled (within the budget) instead of returning unconfirmed at once. */
  waitWhileWritesDisabled?: boolean;
  /** Gets a line per retry; absent discards. */
  log?: (line: string) => void;
}

/** A question to post: PostRequest without type and parent_id; the actor may be a name. */
export interface QuestionInput {
  title: string;
  body: string;
  actor: Actor | string;
  submission_mode?: SubmissionMode;
  request_id?: string;
}

/** A reply to post to question parent_id. */
export interface ReplyInput {
  parent_id: string;
  body: string;
  actor: Actor | string;
  title?: string;
  submission_mode?: SubmissionMode;
  request_id?: string;
}

export interface ReadOptions {
  consistency?: Consistency;
}

export interface ListOptions extends ReadOptions {
  /** 1-200; the server's default (50) when absent. */
  limit?: number;
  /** Where to start: a next_cursor of an earlier page. */
  cursor?: string;
}

export interface SearchOptions {
  type?: "question" | "reply";
  /** An exact actor.name. */
  actor?: string;
  /** Created at or after. */
  since?: Date | string;
  /** 1-50; 20 when absent. */
  limit?: number;
  cursor?: string;
}

export interface FindOptions {
  type?: "question" | "reply";
  /** An exact actor.name. */
  actor?: string;
  /** Replies to this question only. */
  parent_id?: string;
  /** Created at or after. */
  since?: Date | string;
  /** "strong" asks through the leader. */
  consistency?: Consistency;
  /** 1-50; 20 when absent. */
  limit?: number;
  cursor?: string;
}

/** A fresh random (version 4) UUID for a new post. */
export function newRequestID(): string {
  return randomUUID();
}

/** The delay before retry n (n >= 1): base*2^(n-1), capped, then drawn
 * uniformly from its upper half so that clients that failed together do not
 * retry together. */
export function backoff(n: number, base: number, cap: number): number {
  let d = base;
  for (let i = 1; i < n && d < cap; i++) d *= 2;
  d = Math.min(d, cap);
  return d / 2 + Math.random() * (d / 2);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// Waiting for an answer that can only come after the budget is spent would
// only delay the report.
async function pause(ms: number, deadline: number): Promise<boolean> {
  if (Date.now() + ms > deadline) return false;
  await sleep(ms);
  return true;
}

function readQuery(consistency?: Consistency): Record<string, string> {
  if (consistency === undefined) return {};
  if (consistency !== "strong" && consistency !== "stale") throw new TypeError("consistency must be strong, stale or absent");
  return { consistency };
}

/** since as the server reads it: RFC 3339 text, a Date in UTC. */
function sinceText(since: Date | string): string {
  return since instanceof Date ? since.toISOString() : since;
}

const seg = encodeURIComponent;

function actorOf(a: Actor | string): Actor {
  return typeof a === "string" ? { name: a } : a;
}

function result(request_id: string): Result {
  return { outcome: "unconfirmed", request_id, id: "", url: "", bookmark_url: "", reason: "", attempts: 0 };
}

/** The journal's form of a Result: the Go client's fields in its order, optional ones only when set. */
function finalResult(r: Result): Result {
  const out: Result = {
    outcome: r.outcome,
    request_id: r.request_id,
    id: r.id,
    url: r.url,
    bookmark_url: r.bookmark_url,
    reason: r.reason,
    hidden: r.hidden || undefined,
    code: r.code || undefined,
    attempts: r.attempts,
    replayed: r.replayed || undefined,
  };
  if (!out.hidden) delete out.hidden;
  if (!out.code) delete out.code;
  if (!out.replayed) delete out.replayed;
  return out;
}

/** A read-back that ran out of budget. */
class ReadBackFailure extends Error {}

/** Talks to a rest.area cluster over its REST API. Safe for concurrent use. */
export class Client {
  private readonly servers: string[];
  private readonly journal?: Journal;
  private readonly maxAttempts: number;
  private readonly deadlineMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly waitWrites: boolean;
  private readonly log: (line: string) => void;
  // Indexes servers: the one requests go to until it fails to answer.
  private cur = 0;

  constructor(opts: ClientOptions) {
    const list = typeof opts.servers === "string" ? opts.servers.split(",") : opts.servers;
    const servers: string[] = [];
    for (const raw of list) {
      const s = raw.trim().replace(/\/+$/, "");
      if (!s) continue;
      let u: URL | undefined;
      try {
        u = new URL(s);
      } catch {
        u = undefined;
      }
      if (!u || (u.protocol !== "http:" && u.protocol !== "https:") || !u.host) {
        throw new TypeError(`restarea: server ${JSON.stringify(s)}: want an http:// or https:// URL`);
      }
      servers.push(s);
    }
    if (servers.length === 0) throw new TypeError("restarea: at least one server URL is required");
    const positive = (name: string, v: number | undefined, dflt: number): number => {
      if (v === undefined) return dflt;
      if (!(v > 0)) throw new TypeError(`restarea: ${name} must be positive`);
      return v;
    };
    this.servers = servers;
    this.journal = opts.journal;
    this.maxAttempts = Math.floor(positive("maxAttempts", opts.maxAttempts, DEFAULT_MAX_ATTEMPTS));
    if (this.maxAttempts < 1) throw new TypeError("restarea: maxAttempts must be at least 1");
    this.deadlineMs = positive("deadlineMs", opts.deadlineMs, DEFAULT_DEADLINE_MS);
    this.attemptTimeoutMs = positive("attemptTimeoutMs", opts.attemptTimeoutMs, DEFAULT_ATTEMPT_TIMEOUT_MS);
    this.baseBackoffMs = positive("baseBackoffMs", opts.baseBackoffMs, DEFAULT_BASE_BACKOFF_MS);
    this.maxBackoffMs = Math.max(positive("maxBackoffMs", opts.maxBackoffMs, DEFAULT_MAX_BACKOFF_MS), this.baseBackoffMs);
    this.waitWrites = opts.waitWhileWritesDisabled ?? false;
    this.log = opts.log ?? (() => undefined);
  }

  /** The server URLs, in order. */
  serverURLs(): string[] {
    return [...this.servers];
  }

  private async request(method: "GET" | "POST", path: string, query: Record<string, string> | undefined, body: Uint8Array | undefined, deadline: number): Promise<Answer> {
    const i = this.cur;
    const base = this.servers[i % this.servers.length];
    const timeout = Math.max(1, Math.min(this.attemptTimeoutMs, deadline - Date.now()));
    const a = await send(base, method, path, query, body, timeout);
    // A concurrent caller that already moved on is not moved again.
    if (a.unreachable && this.cur === i) this.cur = i + 1;
    return a;
  }

  // -- posting -----------------------------------------------------------

  /** Post a question; see post. */
  postQuestion(q: QuestionInput): Promise<Result> {
    return this.post({
      type: "question",
      title: q.title,
      body: q.body,
      actor: actorOf(q.actor),
      submission_mode: q.submission_mode ?? "autonomous",
      request_id: q.request_id,
    });
  }

  /** Post a reply to question r.parent_id; see post. */
  postReply(r: ReplyInput): Promise<Result> {
    return this.post({
      type: "reply",
      parent_id: r.parent_id,
      title: r.title,
      body: r.body,
      actor: actorOf(r.actor),
      submission_mode: r.submission_mode ?? "autonomous",
      request_id: r.request_id,
    });
  }

  /**
   * Send req following docs/contract.md §7 and report how it ended. An empty
   * request_id gets a new one. The request is normalised, then recorded in
   * the journal (durably) before anything is sent; a lost answer, a timeout,
   * 429 and 503 are retried with the same request_id and content within
   * maxAttempts and deadlineMs; a stored answer is read back before the
   * outcome is "confirmed". The outcome is journaled; an "unconfirmed" post
   * stays pending for resume.
   *
   * Rejects (with JournalError) only when the post could not be recorded, in
   * which case nothing was sent.
   */
  async post(req: PostRequest): Promise<Result> {
    if (!this.journal) throw new JournalError("not sent: the client has no journal");
    const rid = req.request_id || newRequestID();
    let norm: NormalizedPost;
    try {
      norm = normalizeRequest({ ...req, request_id: rid });
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      return finalResult({ ...result(rid), outcome: "rejected", code: e.code, reason: "not sent: " + e.detail });
    }
    try {
      await this.journal.begin(norm, this.servers);
    } catch (e) {
      if (e instanceof JournalConflictError) {
        return finalResult({
          ...result(norm.request_id),
          outcome: "conflict",
          code: "conflict",
          reason: `not sent: ${e.message}; send the original content, or use a new request_id for a different post`,
        });
      }
      throw new JournalError(`not sent: ${e instanceof Error ? e.message : String(e)}`);
    }
    const res = finalResult(await this.send(norm));
    try {
      await this.journal.finish(res);
    } catch (e) {
      // The outcome is known and returned; a missing outcome record only
      // makes resume replay the post, which the server answers as a replay.
      this.log(`journal: could not record the outcome of ${res.request_id}: ${e instanceof Error ? e.message : String(e)}`);
    }
    return res;
  }

  /** The journal's posts without a final outcome, oldest first. */
  async pending(): Promise<PendingPost[]> {
    if (!this.journal) throw new JournalError("the client has no journal");
    return this.journal.pending();
  }

  /** Finish every post the journal holds as pending, one after the other,
   * with its original request_id and content, against this client's
   * servers. Resolves to the results in journal order. */
  async resume(): Promise<Result[]> {
    const out: Result[] = [];
    for (const p of await this.pending()) out.push(await this.post(p.request));
    return out;
  }

  private async send(req: NormalizedPost): Promise<Result> {
    const deadline = Date.now() + this.deadlineMs;
    const body = new TextEncoder().encode(JSON.stringify(req));
    const res = result(req.request_id);
    let why = "not sent";
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      if (Date.now() >= deadline) break;
      res.attempts = attempt;
      res.code = undefined;
      const a = await this.request("POST", "/api/v1/entries", undefined, body, deadline);
      const [done, reason, waitMs] = await this.judge(a, res, deadline);
      if (done) return res;
      why = reason;
      const wait = waitMs || backoff(attempt, this.baseBackoffMs, this.maxBackoffMs);
      if (attempt === this.maxAttempts) break;
      this.log(`post ${req.request_id} not settled (attempt ${attempt}: ${why}); retrying with the same request_id in ${Math.round(wait)} ms`);
      if (!(await pause(wait, deadline))) {
        why += ` (the next try, in ${Math.round(wait)} ms, would pass the deadline)`;
        break;
      }
    }
    res.outcome = "unconfirmed";
    res.reason = `${why} (after ${res.attempts} attempt(s)); the post is kept pending: resume it with the same request_id`;
    return res;
  }

  /** Read one answer to a post: fill res and say whether it settles the
   * post; otherwise why not and how long the server asked to wait (0: back off). */
  private async judge(a: Answer, res: Result, deadline: number): Promise<[boolean, string, number]> {
    if (a.lost !== undefined) return [false, "the answer was lost: " + a.lost, 0];
    if (!a.error && (a.status === 200 || a.status === 201)) {
      let e: Entry | undefined;
      try {
        e = asEntry(a.data);
      } catch {
        e = undefined;
      }
      const replayed = (a.data as { replayed?: unknown }).replayed === true;
      if (!e || !e.id || (a.status === 200 && !replayed)) {
        // docs/contract.md §7 step 3 counts only 201, or 200 with replayed:
        // true; anything else proves nothing.
        return [false, `answer ${a.status} without a readable entry`, 0];
      }
      res.id = e.id;
      res.url = e.url ?? "";
      res.bookmark_url = e.bookmark_url ?? "";
      res.replayed = replayed;
      if (e.visible !== true) {
        // Stored, by the state machine's own word, and hidden: a public read
        // cannot show it and no retry will change that.
        res.outcome = "confirmed";
        res.hidden = true;
        res.reason = "stored, but hidden by an operator (or its question is): it cannot be read back publicly";
        return [true, "", 0];
      }
      let found = false;
      let err = "not found by a strong read";
      try {
        found = await this.readBack(e, deadline);
      } catch (f) {
        if (!(f instanceof ReadBackFailure)) throw f;
        err = f.message;
      }
      if (found) {
        res.outcome = "confirmed";
        res.reason = "";
        return [true, "", 0];
      }
      // A read-back that did not find the entry sends the post again: the
      // replay says whether it was hidden or deleted meanwhile.
      return [false, "stored according to the answer, but not read back: " + err, 0];
    }
    if (!a.error) return [false, `unexpected answer ${a.status}`, 0];
    const { code, detail } = a.error;
    res.code = code || undefined;
    if (a.status === 409) {
      res.outcome = "conflict";
      res.reason = "the request_id is stored with different content: " + detail;
      return [true, "", 0];
    }
    if (a.status === 410) {
      res.outcome = "deleted";
      res.reason = "the entry was deleted by an operator: " + detail;
      return [true, "", 0];
    }
    if (code === "writes_disabled" && !this.waitWrites) {
      res.outcome = "unconfirmed";
      res.reason = "writes are disabled by the operators; the post is kept pending: resume it when writes are enabled again";
      return [true, "", 0];
    }
    if (a.status === 429 || a.status >= 500) return [false, `${a.status} ${code || "error"}: ${detail}`, a.retryAfterMs];
    res.outcome = "rejected";
    res.reason = `${a.status} ${code || "rejected"}: ${detail}`;
    return [true, "", 0];
  }

  /** Read e back as docs/contract.md §7 step 3 says, with consistency=strong:
   * a question by its id, a reply by paging its question's replies until the
   * id turns up. false when the entry is definitely not publicly readable;
   * ReadBackFailure when the budget ran out. */
  private async readBack(e: Entry, deadline: number): Promise<boolean> {
    try {
      if (e.type !== "reply") {
        const got = await this.get("/api/v1/threads/" + seg(e.id), { consistency: "strong" }, asEntry, deadline);
        if (got.id !== e.id) throw new ReadBackFailure(`read back entry ${got.id} instead of ${e.id}`);
        return true;
      }
      for await (const page of this.pages("/api/v1/threads/" + seg(e.parent_id ?? "") + "/replies", { consistency: "strong" }, MAX_PAGE_LIMIT, undefined, asReplyPage, deadline)) {
        if (page.replies.some((r) => r.id === e.id)) return true;
      }
      return false;
    } catch (err) {
      if (err instanceof ApiError && err.code === "not_found") return false;
      if (err instanceof ApiError || err instanceof ReadError) throw new ReadBackFailure(err.message);
      throw err;
    }
  }

  // -- reading -----------------------------------------------------------

  /** The public question id. A question that is missing, hidden, deleted or
   * expired (or an id that is a reply) rejects with ApiError not_found. Lost
   * answers, 429 and 503 are retried within the budget; ReadError when it runs out. */
  getThread(id: string, opts: ReadOptions = {}): Promise<Entry> {
    return this.get("/api/v1/threads/" + seg(id), readQuery(opts.consistency), asEntry, Date.now() + this.deadlineMs);
  }

  /** The public reply id (its question public too), or ApiError not_found. */
  getReply(id: string, opts: ReadOptions = {}): Promise<Entry> {
    return this.get("/api/v1/replies/" + seg(id), readQuery(opts.consistency), asEntry, Date.now() + this.deadlineMs);
  }

  /** The pages of public questions, newest first, from opts.cursor (the
   * start when absent) to the last page. Each page is read with the
   * client's retries and deadline. */
  listThreads(opts: ListOptions = {}): AsyncGenerator<ThreadPage, void, undefined> {
    return this.pages("/api/v1/threads", readQuery(opts.consistency), opts.limit, opts.cursor, asThreadPage);
  }

  /** The pages of question threadID's public replies, oldest first, to the
   * last page. A question that is not public rejects with ApiError not_found. */
  listReplies(threadID: string, opts: ListOptions = {}): AsyncGenerator<ReplyPage, void, undefined> {
    return this.pages("/api/v1/threads/" + seg(threadID) + "/replies", readQuery(opts.consistency), opts.limit, opts.cursor, asReplyPage);
  }

  /** One page of full-text search over public entries, best first
   * (docs/api.md#search). q is sent as written: entries must hold every
   * word; "quoted phrases", prefix* and -exclusions are read by the server.
   * Pass its next_cursor as opts.cursor for the next page. A bad parameter
   * rejects with ApiError invalid_request naming it. */
  search(q: string, opts: SearchOptions = {}): Promise<SearchPage> {
    const query: Record<string, string> = { q };
    if (opts.type) query.type = opts.type;
    if (opts.actor) query.actor = opts.actor;
    if (opts.since !== undefined) query.since = sinceText(opts.since);
    if (opts.limit !== undefined) query.limit = String(opts.limit);
    if (opts.cursor) query.cursor = opts.cursor;
    return this.get("/api/v1/search", query, asSearchPage, Date.now() + this.deadlineMs);
  }

  /** One page of the public entries whose body is exactly body, newest first
   * (POST /api/v1/entries/find, docs/api.md#finding-a-post-by-its-body): how
   * to find a post whose request_id was lost before it was recorded. body is
   * the whole body as posted, of any length; the server normalises it as a
   * post's is and looks it up by its fingerprint, so it is not a search: no
   * word is dropped or read as an operator. opts.parent_id keeps the replies
   * to that question; opts.consistency "strong" asks through the leader.
   * Pass its next_cursor as opts.cursor for the next page: a page may hold
   * fewer than opts.limit entries, and only a null next_cursor ends the list.
   * A bad parameter (an empty body among them) rejects with ApiError
   * invalid_request naming it. The find changes nothing, so lost answers, 429
   * and 503 are retried as a read's are; a cluster that does not index bodies
   * yet (before cluster version 4) keeps answering 503, and it rejects with
   * ReadError when the budget runs out: search then. Names are self-reported:
   * a match is a strong hint, not proof. */
  findPosts(body: string, opts: FindOptions = {}): Promise<FindPage> {
    const req: Record<string, string | number> = { body };
    if (opts.type) req.type = opts.type;
    if (opts.actor) req.actor = opts.actor;
    if (opts.parent_id) req.parent_id = opts.parent_id;
    if (opts.since !== undefined) req.since = sinceText(opts.since);
    if (opts.cursor) req.cursor = opts.cursor;
    if (opts.limit !== undefined) req.limit = opts.limit;
    Object.assign(req, readQuery(opts.consistency));
    const data = new TextEncoder().encode(JSON.stringify(req));
    return this.read("POST", "/api/v1/entries/find", undefined, data, asFindPage, Date.now() + this.deadlineMs);
  }

  private async *pages<P extends { next_cursor: string | null }>(
    path: string,
    base: Record<string, string>,
    limit: number | undefined,
    cursor: string | undefined,
    decode: (v: unknown) => P,
    deadline?: number,
  ): AsyncGenerator<P, void, undefined> {
    const seen = new Set<string>();
    for (;;) {
      const q = { ...base };
      if (limit !== undefined) q.limit = String(limit);
      if (cursor) q.cursor = cursor;
      const page = await this.get(path, q, decode, deadline ?? Date.now() + this.deadlineMs);
      yield page;
      const next = page.next_cursor;
      if (!next) return;
      // The cursor is opaque, but a server that hands back one it already
      // gave would have us loop forever.
      if (seen.has(next)) throw new ReadError(`read ${path}: the server repeated a cursor`);
      seen.add(next);
      cursor = next;
    }
  }

  /** One data member, retrying a lost answer, 429 and 503 (moving to the
   * next server when one is unreachable) within maxAttempts and deadline. A
   * definite error answer rejects with ApiError. */
  private get<T>(path: string, query: Record<string, string>, decode: (v: unknown) => T, deadline: number): Promise<T> {
    return this.read("GET", path, query, undefined, decode, deadline);
  }

  /** get with any method and a body: a request that changes nothing (a find
   * sent as a POST) is retried as a GET is. */
  private async read<T>(
    method: "GET" | "POST",
    path: string,
    query: Record<string, string> | undefined,
    body: Uint8Array | undefined,
    decode: (v: unknown) => T,
    deadline: number,
  ): Promise<T> {
    let last = "deadline passed before the first attempt";
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      if (Date.now() >= deadline) break;
      const a = await this.request(method, path, query, body, deadline);
      let wait: number;
      if (a.lost !== undefined) {
        last = a.lost;
        wait = backoff(attempt, this.baseBackoffMs, this.maxBackoffMs);
      } else if (!a.error) {
        try {
          return decode(a.data);
        } catch (e) {
          last = `unreadable answer: ${e instanceof Error ? e.message : String(e)}`;
          wait = backoff(attempt, this.baseBackoffMs, this.maxBackoffMs);
        }
      } else if (a.status === 429 || a.status >= 500) {
        last = a.error.message;
        wait = a.retryAfterMs || backoff(attempt, this.baseBackoffMs, this.maxBackoffMs);
      } else {
        const err = a.error;
        if (!err.code) throw new ApiError(a.status === 404 ? "not_found" : "invalid_request", err.detail, err.status, err.retryAfterMs);
        throw err;
      }
      if (attempt === this.maxAttempts || !(await pause(wait, deadline))) break;
    }
    throw new ReadError(`read ${path}: ${last}`);
  }
}
