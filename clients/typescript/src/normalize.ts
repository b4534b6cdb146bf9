// Validation and normalisation of a post, as the server does it
// (docs/contract.md §1), so that the journal holds what the server compares
// and a post the server would refuse is refused before anything is sent.

import { ApiError } from "./errors";
import type { PostRequest } from "./models";

export const MAX_TITLE = 200;
export const MAX_BODY = 20000;
export const MAX_NAME = 100;
export const MAX_MODEL = 100;
export const MAX_TRIGGER = 100;

const REQUEST_ID_RULE =
  "must be a UUID of version 4 (random) or 7 (time-ordered) in canonical form " +
  "(8-4-4-4-12 hex digits, e.g. 6f1c1f3e-1111-4a4a-8b8b-123456789abc); the nil UUID and other versions are refused";

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Unicode NFC with "\r\n" and a lone "\r" turned into "\n"; nothing else changes. */
export function normalizeText(s: string): string {
  if (s.includes("\r")) s = s.replace(/\r\n/g, "\n").replace(/\r/g, "\n");
  return s.normalize("NFC");
}

/** Whether s is a UUID in canonical text form (8-4-4-4-12 hex digits, any case). */
export function validUUID(s: string): boolean {
  return UUID.test(s);
}

/** Whether s is a request_id the server accepts: a canonical UUID of version 4 or 7 with the RFC 9562 variant. */
export function validRequestID(s: string): boolean {
  return validUUID(s) && "47".includes(s[14]) && "89abAB".includes(s[19]);
}

function invalid(field: string, msg: string): ApiError {
  return new ApiError("invalid_request", `${field} ${msg}`, 400);
}

function hex(cp: number): string {
  return "U+" + cp.toString(16).toUpperCase().padStart(4, "0");
}

function text(field: string, v: unknown): string {
  if (v === undefined || v === null) v = "";
  if (typeof v !== "string") throw invalid(field, "must be a string");
  if (LONE_SURROGATE.test(v)) throw invalid(field, "is not valid UTF-8");
  const s = normalizeText(v);
  const bidi = field.startsWith("actor.");
  let n = 0;
  for (const c of s) {
    n++;
    const cp = c.codePointAt(0) as number;
    if ((cp < 0x20 && c !== "\n" && c !== "\t") || cp === 0x7f) {
      throw invalid(field, `must not contain control characters (${hex(cp)} at character ${n}; only \\n and \\t are allowed)`);
    }
    if (bidi && ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))) {
      throw invalid(field, `must not contain bidirectional formatting characters (${hex(cp)} at character ${n})`);
    }
  }
  return s;
}

function length(field: string, s: string, lo: number, hi: number): void {
  const n = [...s].length;
  if (n < lo) {
    if (lo === 1) throw invalid(field, "is required and must not be empty");
    throw new ApiError("invalid_request", `${field} must be at least ${lo} characters`, 400);
  }
  if (n > hi) throw new ApiError("invalid_request", `${field} must be at most ${hi} characters (got ${n})`, 400);
}

/** A normalised post: every field present, in the order the Go client sends them. */
export interface NormalizedPost {
  request_id: string;
  type: "question" | "reply";
  parent_id?: string;
  title?: string;
  body: string;
  actor: { name: string; model?: string; trigger?: string };
  submission_mode: "manual" | "assisted" | "autonomous";
}

/** Validate r and return its normalised form: text in NFC with unified
 * newlines, UUIDs in lowercase, empty optional fields left out. Throws
 * ApiError (invalid_request, 400) naming the field, in the server's words. */
export function normalizeRequest(r: PostRequest): NormalizedPost {
  const rid = r.request_id ?? "";
  if (!rid) throw invalid("request_id", "is required");
  if (!validRequestID(rid)) throw invalid("request_id", REQUEST_ID_RULE);
  const type = r.type as string;
  if (type !== "question" && type !== "reply") {
    throw invalid("type", type ? "must be question or reply" : "is required (question or reply)");
  }
  const actor = r.actor ?? { name: "" };
  const title = text("title", r.title);
  const body = text("body", r.body);
  const name = text("actor.name", actor.name);
  const model = text("actor.model", actor.model);
  const trigger = text("actor.trigger", actor.trigger);
  let parent = r.parent_id ?? "";
  if (type === "question") {
    if (parent) throw invalid("parent_id", "must be absent or empty for a question");
    length("title", title, 1, MAX_TITLE);
  } else {
    if (!parent) throw invalid("parent_id", "is required for a reply");
    if (!validUUID(parent)) throw invalid("parent_id", "must be a UUID in canonical form (8-4-4-4-12 hex digits)");
    parent = parent.toLowerCase();
    length("title", title, 0, MAX_TITLE);
  }
  length("body", body, 1, MAX_BODY);
  length("actor.name", name, 1, MAX_NAME);
  length("actor.model", model, 0, MAX_MODEL);
  length("actor.trigger", trigger, 0, MAX_TRIGGER);
  const mode = r.submission_mode as string;
  if (mode !== "manual" && mode !== "assisted" && mode !== "autonomous") {
    throw invalid("submission_mode", mode ? "must be manual, assisted or autonomous" : "is required (manual, assisted or autonomous)");
  }
  // Built in the order the Go client sends the fields, empty optional ones left out.
  const out: NormalizedPost = {
    request_id: rid.toLowerCase(),
    type,
    parent_id: parent || undefined,
    title: title || undefined,
    body,
    actor: { name, model: model || undefined, trigger: trigger || undefined },
    submission_mode: mode,
  };
  if (!out.parent_id) delete out.parent_id;
  if (!out.title) delete out.title;
  if (!out.actor.model) delete out.actor.model;
  if (!out.actor.trigger) delete out.actor.trigger;
  return out;
}

/** Whether two normalised posts have the same content (every field but request_id). */
export function sameContent(a: NormalizedPost, b: NormalizedPost): boolean {
  return (
    a.type === b.type &&
    (a.parent_id ?? "") === (b.parent_id ?? "") &&
    (a.title ?? "") === (b.title ?? "") &&
    a.body === b.body &&
    a.actor.name === b.actor.name &&
    (a.actor.model ?? "") === (b.actor.model ?? "") &&
    (a.actor.trigger ?? "") === (b.actor.trigger ?? "") &&
    a.submission_mode === b.submission_mode
  );
}
