// The journal: every post recorded before it is sent, and its outcome
// after, so that a post whose answer was lost is retried with the same
// request_id and content, even by another process after a crash. The file
// format is the Go client's (client/journal.go), one JSON object a line, so
// `restarea post --resume` finishes what this client left pending and the
// other way round.

import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";

import { JournalConflictError, JournalError } from "./errors";
import { sameContent, type NormalizedPost } from "./normalize";
import { isFinal, OUTCOMES, type Result } from "./outcome";

/** Written before a post is sent: the normalised request and its servers. */
export const KIND_PENDING = "pending";
/** Written when Client.post returns: the Result. */
export const KIND_OUTCOME = "outcome";
export const JOURNAL_VERSION = 1;

/** One line of the journal. */
export interface JournalRecord {
  v: number;
  kind: string;
  request_id: string;
  time: string;
  servers?: string[];
  request?: NormalizedPost;
  result?: Result;
}

/** A post the journal holds as not finished. request is the normalised
 * request exactly as first sent; servers the ones it was last sent to; since
 * when it was first recorded; reason why the last attempt left it
 * unconfirmed ("" when the process ended before the post returned). */
export interface PendingPost {
  request: NormalizedPost;
  servers: string[];
  since: string;
  reason: string;
}

/** What Client needs of a journal. begin is durable before its promise resolves. */
export interface Journal {
  /** Record req (normalised) as pending, to be sent to servers. Rejects with
   * JournalConflictError, recording nothing, when the journal holds the
   * request_id with different content. */
  begin(req: NormalizedPost, servers: readonly string[]): Promise<void>;
  /** Record the outcome of a post. */
  finish(res: Result): Promise<void>;
  /** Every readable record, in order. */
  records(): Promise<JournalRecord[]>;
  /** The posts without a final outcome, in the order first recorded. */
  pending(): Promise<PendingPost[]>;
}

/** The posts whose last record is a pending record or an unconfirmed outcome, in the order first recorded. */
export function pendingOf(recs: readonly JournalRecord[]): PendingPost[] {
  const order: string[] = [];
  const posts = new Map<string, PendingPost>();
  const open = new Map<string, boolean>();
  for (const r of recs) {
    if (r.kind === KIND_PENDING) {
      if (!r.request) continue;
      let p = posts.get(r.request_id);
      if (!p) {
        p = { request: r.request, since: r.time, servers: [], reason: "" };
        posts.set(r.request_id, p);
        order.push(r.request_id);
      }
      p.servers = r.servers ?? [];
      p.reason = "";
      open.set(r.request_id, true);
    } else if (r.kind === KIND_OUTCOME) {
      const p = posts.get(r.request_id);
      if (p && r.result) {
        open.set(r.request_id, !isFinal(r.result.outcome));
        p.reason = r.result.reason ?? "";
      }
    }
  }
  return order.filter((id) => open.get(id)).map((id) => posts.get(id) as PendingPost);
}

function pendingRecord(req: NormalizedPost, servers: readonly string[]): JournalRecord {
  const r: JournalRecord = { v: JOURNAL_VERSION, kind: KIND_PENDING, request_id: req.request_id, time: new Date().toISOString() };
  if (servers.length > 0) r.servers = [...servers];
  r.request = req;
  return r;
}

function outcomeRecord(res: Result): JournalRecord {
  return { v: JOURNAL_VERSION, kind: KIND_OUTCOME, request_id: res.request_id, time: new Date().toISOString(), result: res };
}

function checkConflict(recs: readonly JournalRecord[], req: NormalizedPost): void {
  for (const r of recs) {
    if (r.kind === KIND_PENDING && r.request_id === req.request_id && r.request && !sameContent(r.request, req)) {
      throw new JournalConflictError();
    }
  }
}

/** Serialises async critical sections within this process. */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn);
    this.tail = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }
}

/** A journal held in this process's memory: retries within the process are
 * safe, but a post pending when the process ends is forgotten. Use a
 * FileJournal when a post must survive a crash. */
export class MemoryJournal implements Journal {
  private recs: JournalRecord[] = [];

  async begin(req: NormalizedPost, servers: readonly string[]): Promise<void> {
    checkConflict(this.recs, req);
    this.recs.push(pendingRecord(req, servers));
  }

  async finish(res: Result): Promise<void> {
    this.recs.push(outcomeRecord(res));
  }

  async records(): Promise<JournalRecord[]> {
    return [...this.recs];
  }

  async pending(): Promise<PendingPost[]> {
    return pendingOf(this.recs);
  }
}

/** $XDG_STATE_HOME/restarea/journal.jsonl, or ~/.local/state/restarea/journal.jsonl:
 * the Go client's and `restarea post`'s default. */
export function defaultJournalPath(): string {
  const d = process.env.XDG_STATE_HOME ?? "";
  if (d && path.isAbsolute(d)) return path.join(d, "restarea", "journal.jsonl");
  const home = os.homedir();
  if (!home) throw new JournalError("journal: no home directory for the default path");
  return path.join(home, ".local", "state", "restarea", "journal.jsonl");
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.stat(p);
    return true;
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return false;
    throw new JournalError(`journal: ${errText(e)}`);
  }
}

async function syncDir(dir: string): Promise<void> {
  try {
    const h = await fs.open(dir, "r");
    try {
      await h.sync();
    } finally {
      await h.close();
    }
  } catch (e) {
    throw new JournalError(`journal dir fsync: ${errText(e)}`);
  }
}

async function writeAll(h: fs.FileHandle, b: Uint8Array): Promise<void> {
  let off = 0;
  while (off < b.length) {
    const { bytesWritten } = await h.write(b, off, b.length - off, null);
    off += bytesWritten;
  }
}

function parseRecord(line: string): JournalRecord | undefined {
  let d: unknown;
  try {
    d = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof d !== "object" || d === null) return undefined;
  const r = d as JournalRecord;
  if (typeof r.request_id !== "string" || !r.request_id || typeof r.kind !== "string") return undefined;
  if (r.servers !== undefined && !Array.isArray(r.servers)) return undefined;
  if (r.request !== undefined && (typeof r.request !== "object" || r.request === null || typeof r.request.body !== "string")) return undefined;
  if (r.result !== undefined && (typeof r.result !== "object" || r.result === null || !OUTCOMES.includes(r.result.outcome))) {
    return undefined;
  }
  return r;
}

/**
 * An append-only file of JSON lines. Every append is written with one write
 * and fsynced before its promise resolves (and a newly created file's
 * directory too); appends from this process are serialised, whichever
 * FileJournal of the path makes them. Node has no
 * file lock, so unlike the Go and Python clients it does not exclude other
 * processes: give each process its own journal file (or finish one's
 * pending posts before another appends).
 */
export class FileJournal implements Journal {
  // One mutex a path, so that two FileJournals of one file in this process
  // do not interleave a conflict check and an append.
  private static readonly mutexes = new Map<string, Mutex>();
  private readonly mu: Mutex;

  private constructor(readonly path: string) {
    let mu = FileJournal.mutexes.get(path);
    if (!mu) {
      mu = new Mutex();
      FileJournal.mutexes.set(path, mu);
    }
    this.mu = mu;
  }

  /** Open the journal at file ("" or absent: defaultJournalPath()), creating
   * its directory (0700) and the file (0600) if needed, durably. */
  static async open(file?: string): Promise<FileJournal> {
    const p = path.resolve(file || defaultJournalPath());
    const dir = path.dirname(p);
    const existed = await exists(dir);
    try {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw new JournalError(`journal: ${errText(e)}`);
    }
    // A new directory's own entry must be durable, or the journal inside it
    // could vanish with it after a crash.
    if (!existed) await syncDir(path.dirname(dir));
    const j = new FileJournal(p);
    await j.mu.run(async () => {
      const created = !(await exists(p));
      const h = await j.openAppend();
      await j.closeSynced(h, created);
    });
    return j;
  }

  begin(req: NormalizedPost, servers: readonly string[]): Promise<void> {
    return this.mu.run(async () => {
      checkConflict(await this.read(), req);
      await this.append(pendingRecord(req, servers));
    });
  }

  finish(res: Result): Promise<void> {
    return this.mu.run(() => this.append(outcomeRecord(res)));
  }

  /** Every readable record in file order. A line that cannot be parsed (the
   * torn end of an append cut by a crash) is skipped. */
  records(): Promise<JournalRecord[]> {
    return this.mu.run(() => this.read());
  }

  async pending(): Promise<PendingPost[]> {
    return pendingOf(await this.records());
  }

  /** Rewrite the journal keeping only the records of posts still pending;
   * resolve to how many records were dropped. The new file replaces the old
   * by an atomic rename, fsynced with its directory. */
  compact(): Promise<number> {
    return this.mu.run(async () => {
      const recs = await this.read();
      const keep = new Set(pendingOf(recs).map((p) => p.request.request_id));
      const kept = recs.filter((r) => keep.has(r.request_id));
      const dropped = recs.length - kept.length;
      if (dropped === 0) return 0;
      const tmp = this.path + ".tmp";
      try {
        const h = await fs.open(tmp, "w", 0o600);
        try {
          await writeAll(h, new TextEncoder().encode(kept.map((r) => JSON.stringify(r) + "\n").join("")));
          await h.sync();
        } finally {
          await h.close();
        }
        await fs.rename(tmp, this.path);
      } catch (e) {
        throw new JournalError(`journal compact: ${errText(e)}`);
      }
      await syncDir(path.dirname(this.path));
      return dropped;
    });
  }

  private async openAppend(): Promise<fs.FileHandle> {
    try {
      return await fs.open(this.path, "a+", 0o600);
    } catch (e) {
      throw new JournalError(`journal: ${errText(e)}`);
    }
  }

  private async closeSynced(h: fs.FileHandle, created: boolean): Promise<void> {
    try {
      await h.sync();
    } catch (e) {
      await h.close().catch(() => undefined);
      throw new JournalError(`journal fsync: ${errText(e)}`);
    }
    await h.close();
    if (created) await syncDir(path.dirname(this.path));
  }

  private async append(r: JournalRecord): Promise<void> {
    let line = JSON.stringify(r) + "\n";
    const created = !(await exists(this.path));
    const h = await this.openAppend();
    try {
      const { size } = await h.stat();
      if (size > 0) {
        // A crash may have left the last line without its newline: start on
        // a line of our own so that the torn line stays alone.
        const last = new Uint8Array(1);
        await h.read(last, 0, 1, size - 1);
        if (last[0] !== 0x0a) line = "\n" + line;
      }
      await writeAll(h, new TextEncoder().encode(line));
    } catch (e) {
      await h.close().catch(() => undefined);
      throw new JournalError(`journal write: ${errText(e)}`);
    }
    await this.closeSynced(h, created);
  }

  private async read(): Promise<JournalRecord[]> {
    let data: Uint8Array;
    try {
      data = await fs.readFile(this.path);
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return [];
      throw new JournalError(`journal: ${errText(e)}`);
    }
    const out: JournalRecord[] = [];
    for (const raw of new TextDecoder().decode(data).split("\n")) {
      const line = raw.trim();
      if (!line) continue;
      const r = parseRecord(line);
      if (r) out.push(r);
    }
    return out;
  }
}
