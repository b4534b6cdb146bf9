// One HTTP request and what it produced, judged the way the Go client
// judges it (client/client.go): an answer, a definite error, or a lost answer.

import { ApiError } from "./errors";

/** Caps the answers read: a page of 200 replies of 20,000 characters fits. */
export const MAX_ANSWER_BYTES = 64 << 20;

export const USER_AGENT = "restarea-client-typescript";

/** What one request produced. lost is set when there is no usable answer
 * (connection failure, timeout, a cut or garbled body): the request may or
 * may not have had its effect. unreachable is set when no HTTP answer came at
 * all, so the next server should be tried. */
export interface Answer {
  status: number;
  data?: unknown;
  error?: ApiError;
  retryAfterMs: number;
  lost?: string;
  unreachable?: boolean;
}

/** Retry-After in milliseconds: whole seconds or an HTTP date; 0 when absent or unreadable. */
export function parseRetryAfter(h: string | null, now: number = Date.now()): number {
  const s = (h ?? "").trim();
  if (!s) return 0;
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const t = Date.parse(s);
  return Number.isFinite(t) && t > now ? t - now : 0;
}

function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = (e as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: string }).code;
    return `${e.message}: ${code ? code + " " : ""}${cause.message}`;
  }
  return e.message;
}

function snippet(s: string): string {
  const r = [...s.trim()];
  return r.length > 120 ? r.slice(0, 120).join("") + "…" : r.join("");
}

async function readCapped(resp: Response, signal: AbortSignal): Promise<Uint8Array> {
  if (!resp.body) return new Uint8Array(0);
  const reader = resp.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    if (signal.aborted) throw new Error("timed out");
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      throw new Error(`larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** Send one request to base and read the whole answer within timeoutMs.
 * Redirects are not followed: a POST turned into a GET would lose the post
 * while looking like an answer. */
export async function send(
  base: string,
  method: "GET" | "POST",
  path: string,
  query: Record<string, string> | undefined,
  body: Uint8Array | undefined,
  timeoutMs: number,
): Promise<Answer> {
  let u = base + path;
  if (query && Object.keys(query).length > 0) u += "?" + new URLSearchParams(query).toString();
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  try {
    const headers: Record<string, string> = { Accept: "application/json", "User-Agent": USER_AGENT };
    if (body) headers["Content-Type"] = "application/json; charset=utf-8";
    let resp: Response;
    try {
      resp = await fetch(u, { method, headers, body, redirect: "manual", signal: ctl.signal });
    } catch (e) {
      return { status: 0, retryAfterMs: 0, lost: ctl.signal.aborted ? `timed out after ${timeoutMs} ms` : describe(e), unreachable: true };
    }
    const status = resp.status;
    let raw: Uint8Array;
    try {
      raw = await readCapped(resp, ctl.signal);
    } catch (e) {
      // The status line arrived but the body was cut: the answer is lost all the same.
      return { status: 0, retryAfterMs: 0, lost: `answer ${status} cut short: ${ctl.signal.aborted ? "timed out" : describe(e)}` };
    }
    const retryAfterMs = parseRetryAfter(resp.headers.get("Retry-After"));
    let text: string;
    let env: Record<string, unknown> | undefined;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(raw);
    } catch {
      text = new TextDecoder().decode(raw);
    }
    try {
      const v: unknown = JSON.parse(text);
      if (typeof v === "object" && v !== null && !Array.isArray(v)) env = v as Record<string, unknown>;
    } catch {
      env = undefined;
    }
    if (status >= 200 && status < 300) {
      if (!env || env.data === undefined || env.data === null) {
        return { status: 0, retryAfterMs: 0, lost: `answer ${status} without a readable data member` };
      }
      return { status, data: env.data, retryAfterMs };
    }
    const err = env?.error as { code?: unknown; message?: unknown } | undefined;
    if (err && typeof err === "object" && typeof err.code === "string" && err.code) {
      const msg = typeof err.message === "string" ? err.message : "";
      return { status, error: new ApiError(err.code, msg, status, retryAfterMs), retryAfterMs };
    }
    // Not one of ours: a proxy or load balancer answered. Keep the status;
    // the message is the start of what it said.
    return { status, error: new ApiError("", `HTTP ${status}: ${snippet(text)}`, status, retryAfterMs), retryAfterMs };
  } finally {
    clearTimeout(timer);
  }
}
