// The client against a real node, through a proxy that loses answers.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import { ApiError, Client, FileJournal, JournalError, MemoryJournal, ReadError, newRequestID, type ClientOptions } from "../src/index";
import { FaultProxy, Node, binary, closedURL, removeBinary, tempDir, waitFor } from "./support";

let node: Node;
const cleanups: (() => Promise<void> | void)[] = [];

before(async () => {
  node = await new Node().start();
  await node.finalizeUpgrade(); // finding a post by its body needs cluster version 4
}, { timeout: 900_000 });

after(async () => {
  for (const c of cleanups.reverse()) await c();
  await node.remove();
  removeBinary();
}, { timeout: 120_000 });

const unique = (what: string) => `${what} ${randomUUID().slice(0, 12)}`;

function journalPath(): string {
  const d = tempDir("journal");
  cleanups.push(() => fs.rmSync(d, { recursive: true, force: true }));
  return path.join(d, "state", "journal.jsonl");
}

async function client(servers: string, opts: Partial<ClientOptions> = {}, file = journalPath()): Promise<Client> {
  return new Client({ servers, journal: await FileJournal.open(file), baseBackoffMs: 50, maxBackoffMs: 500, ...opts });
}

async function proxy(): Promise<FaultProxy> {
  const p = await new FaultProxy(node.url).listen();
  cleanups.push(() => p.close());
  return p;
}

async function countThreadsTitled(title: string): Promise<number> {
  let n = 0;
  for await (const page of new Client({ servers: node.url }).listThreads({ limit: 200, consistency: "strong" })) {
    n += page.threads.filter((e) => e.title === title).length;
  }
  return n;
}

describe("post", () => {
  it("confirms a question and reads it", async () => {
    const file = journalPath();
    const c = await client(node.url, {}, file);
    const title = unique("How do I retry a lost post?");
    const res = await c.postQuestion({ title, body: "With the same request_id.", actor: { name: "ts-test", model: "m" }, submission_mode: "manual" });
    assert.equal(res.outcome, "confirmed", JSON.stringify(res));
    assert.equal(res.attempts, 1);
    assert.equal(res.replayed, undefined);
    assert.equal(res.reason, "");
    assert.ok(res.url.endsWith("/threads/" + res.id));
    const got = await c.getThread(res.id);
    assert.deepEqual([got.title, got.body, got.actor, got.submission_mode], [title, "With the same request_id.", { name: "ts-test", model: "m" }, "manual"]);
    assert.deepEqual(await c.pending(), []);
    const recs = await (await FileJournal.open(file)).records();
    assert.deepEqual(recs.map((r) => r.kind), ["pending", "outcome"]);
  });

  it("retries a lost answer with the same request_id and gets a replay", async () => {
    const p = await proxy();
    p.scriptPosts("drop");
    const file = journalPath();
    const title = unique("lost answer");
    const res = await (await client(p.url, {}, file)).postQuestion({ title, body: "The first answer never arrives.", actor: "ts-test" });
    assert.equal(res.outcome, "confirmed", JSON.stringify(res));
    assert.deepEqual([res.attempts, res.replayed], [2, true]);
    assert.deepEqual(p.seen, ["drop", "forwarded"]);
    assert.equal(await countThreadsTitled(title), 1);
    const recs = await (await FileJournal.open(file)).records();
    assert.deepEqual([...new Set(recs.map((r) => r.request_id))], [res.request_id]);
  });

  it("reads a reply back by paging after its answers were lost", async () => {
    const c = await client(node.url);
    const q = await c.postQuestion({ title: unique("parent"), body: "A question with replies.", actor: "ts-test" });
    assert.equal(q.outcome, "confirmed");
    for (let i = 0; i < 3; i++) assert.equal((await c.postReply({ parent_id: q.id, body: `earlier reply ${i}`, actor: "ts-test" })).outcome, "confirmed");
    const p = await proxy();
    p.scriptPosts("drop", "drop");
    const r = await (await client(p.url)).postReply({ parent_id: q.id, body: "The reply whose answers were lost twice.", actor: "ts-test", title: "re" });
    assert.equal(r.outcome, "confirmed", JSON.stringify(r));
    assert.deepEqual([r.attempts, r.replayed], [3, true]);
    assert.ok(r.bookmark_url.endsWith("/replies/" + r.id));
    assert.equal((await c.getReply(r.id)).parent_id, q.id);
  });

  it("honours Retry-After on 429", async () => {
    const p = await proxy();
    p.scriptPosts("429");
    const start = Date.now();
    const res = await (await client(p.url)).postQuestion({ title: unique("rate limited"), body: "Waits for Retry-After.", actor: "ts-test" });
    assert.equal(res.outcome, "confirmed", JSON.stringify(res));
    assert.deepEqual([res.attempts, res.replayed], [2, undefined]);
    assert.ok(Date.now() - start >= 1000, "the retry came before Retry-After: 1");
  });

  it("retries 503", async () => {
    const p = await proxy();
    p.scriptPosts("503", "503");
    const res = await (await client(p.url)).postQuestion({ title: unique("unavailable"), body: "Retried after 503.", actor: "ts-test" });
    assert.equal(res.outcome, "confirmed", JSON.stringify(res));
    assert.equal(res.attempts, 3);
  });

  it("reports 409 for changed content under the same request_id", async () => {
    const rid = newRequestID();
    const first = await (await client(node.url)).postQuestion({ title: unique("original"), body: "The original body.", actor: "ts-test", request_id: rid });
    assert.equal(first.outcome, "confirmed");
    // Another journal, so the server is the one that notices.
    const other = new Client({ servers: node.url, journal: new MemoryJournal() });
    const res = await other.postQuestion({ title: unique("changed"), body: "A different body.", actor: "ts-test", request_id: rid });
    assert.deepEqual([res.outcome, res.code, res.attempts], ["conflict", "conflict", 1], JSON.stringify(res));
    assert.deepEqual(await other.pending(), []);
  });

  it("refuses changed content in the journal before sending", async () => {
    const p = await proxy();
    p.dropAll = true;
    const c = await client(p.url, { maxAttempts: 1 });
    const rid = newRequestID();
    const title = unique("kept pending");
    assert.equal((await c.postQuestion({ title, body: "Body one.", actor: "ts-test", request_id: rid })).outcome, "unconfirmed");
    const res = await c.postQuestion({ title, body: "Body two.", actor: "ts-test", request_id: rid });
    assert.deepEqual([res.outcome, res.code], ["conflict", "conflict"]);
    assert.match(res.reason, /^not sent:/);
    assert.equal(p.seen.length, 1, "the conflicting post was sent");
  });

  it("rejects invalid content locally and a missing parent on the server", async () => {
    const file = journalPath();
    const c = await client(node.url, {}, file);
    const local = await c.postQuestion({ title: "a title", body: "", actor: "ts-test" });
    assert.deepEqual([local.outcome, local.code, local.reason], ["rejected", "invalid_request", "not sent: body is required and must not be empty"]);
    assert.deepEqual(await (await FileJournal.open(file)).records(), [], "a post refused locally was journaled");
    const missing = await c.postReply({ parent_id: randomUUID(), body: "A reply to nothing.", actor: "ts-test" });
    assert.deepEqual([missing.outcome, missing.code], ["rejected", "parent_not_found"], JSON.stringify(missing));
    assert.deepEqual(await c.pending(), []);
  });

  it("is unconfirmed while the node is down, and resume finishes it", async () => {
    const n = await new Node().start();
    cleanups.push(() => n.remove());
    await n.stop();
    const file = journalPath();
    const title = unique("posted while the node was down");
    const c = await client(n.url, { maxAttempts: 3, deadlineMs: 10_000 }, file);
    const res = await c.postQuestion({ title, body: "Kept pending.", actor: "ts-test" });
    assert.equal(res.outcome, "unconfirmed", JSON.stringify(res));
    assert.equal(res.attempts, 3);
    assert.match(res.reason, /kept pending/);
    const pending = await c.pending();
    assert.deepEqual(pending.map((pp) => [pp.request.request_id, pp.request.title]), [[res.request_id, title]]);
    assert.match(pending[0].reason, /the answer was lost/);

    await n.start(); // same data, another port: a later process resumes with its own servers
    const later = await client(n.url, {}, file);
    const done = await later.resume();
    assert.deepEqual(done.map((r) => [r.outcome, r.request_id, r.replayed]), [["confirmed", res.request_id, undefined]], JSON.stringify(done));
    assert.deepEqual(await later.pending(), []);
    assert.equal((await later.getThread(done[0].id)).title, title);
  });

  it("is unconfirmed when every answer is lost, and resume gets a replay", async () => {
    const p = await proxy();
    p.dropAll = true;
    const file = journalPath();
    const res = await (await client(p.url, { maxAttempts: 2 }, file)).postQuestion({ title: unique("stored, answers lost"), body: "Body.", actor: "ts-test" });
    assert.equal(res.outcome, "unconfirmed", JSON.stringify(res));
    assert.deepEqual(p.seen, ["drop", "drop"]);
    const done = await (await client(node.url, {}, file)).resume();
    assert.deepEqual(done.map((r) => [r.outcome, r.replayed]), [["confirmed", true]], JSON.stringify(done));
  });

  it("is unconfirmed while writes are disabled, and resume finishes it", async () => {
    assert.equal(await node.admin("PUT", "/settings", { writes_disabled: true }), 200);
    const c = await client(node.url);
    let res;
    try {
      res = await c.postQuestion({ title: unique("while writes are off"), body: "Body.", actor: "ts-test" });
    } finally {
      assert.equal(await node.admin("PUT", "/settings", { writes_disabled: false }), 200);
    }
    assert.deepEqual([res.outcome, res.code, res.attempts], ["unconfirmed", "writes_disabled", 1], JSON.stringify(res));
    assert.match(res.reason, /writes are disabled/);
    const done = await c.resume();
    assert.deepEqual(done.map((r) => [r.outcome, r.request_id]), [["confirmed", res.request_id]]);
  });

  it("reports hidden entries as confirmed and hidden, deleted ones as deleted", async () => {
    const file = journalPath();
    const c = await client(node.url, {}, file);
    const hidden = await c.postQuestion({ title: unique("to be hidden"), body: "Body.", actor: "ts-test" });
    const deleted = await c.postQuestion({ title: unique("to be deleted"), body: "Body.", actor: "ts-test" });
    assert.equal(await node.admin("POST", `/entries/${hidden.id}/hide`), 200);
    assert.equal(await node.admin("POST", `/entries/${deleted.id}/delete`), 200);
    for (const rec of await (await FileJournal.open(file)).records()) {
      if (rec.kind !== "pending" || !rec.request) continue;
      const again = await c.post(rec.request); // a retry of a post whose answer was lost
      if (rec.request_id === hidden.request_id) {
        assert.deepEqual([again.outcome, again.hidden, again.replayed, again.id], ["confirmed", true, true, hidden.id], JSON.stringify(again));
      } else {
        assert.deepEqual([again.outcome, again.code, again.id], ["deleted", "deleted", ""], JSON.stringify(again));
      }
    }
    assert.deepEqual(await c.pending(), []);
  });

  it("leaves a journal the Go client resumes", async () => {
    const file = journalPath();
    const res = await (await client(await closedURL(), { maxAttempts: 1 }, file)).postQuestion({ title: unique("for the Go client"), body: "Body.", actor: "ts-test" });
    assert.equal(res.outcome, "unconfirmed");
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(binary(), ["post", "--resume", "--server", node.url, "--journal", file, "--json"], { timeout: 180_000 }, (err, out, errOut) =>
        err ? reject(new Error(`restarea post --resume: ${err.message}: ${errOut}`)) : resolve(out),
      ),
    );
    const got = JSON.parse(stdout.trim().split("\n").pop() as string) as { outcome: string; request_id: string };
    assert.deepEqual([got.outcome, got.request_id], ["confirmed", res.request_id]);
    assert.deepEqual(await (await FileJournal.open(file)).pending(), [], "the Go client's outcome record was not understood");
  });

  it("refuses to post without a journal", async () => {
    await assert.rejects(new Client({ servers: node.url }).postQuestion({ title: "t", body: "b", actor: "a" }), (e) => e instanceof JournalError);
  });

  it("moves to the next server", async () => {
    const c = await client(`${await closedURL()},${node.url}`);
    const res = await c.postQuestion({ title: unique("second server"), body: "The first one is down.", actor: "ts-test" });
    assert.deepEqual([res.outcome, res.attempts], ["confirmed", 2], JSON.stringify(res));
  });
});

describe("read", () => {
  it("pages over several pages", async () => {
    const c = await client(node.url);
    const mark = randomUUID().slice(0, 8);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await c.postQuestion({ title: `page ${mark} ${i}`, body: "Body.", actor: "ts-test" });
      assert.equal(r.outcome, "confirmed");
      ids.push(r.id);
    }
    const pages = [];
    for await (const page of c.listThreads({ limit: 2 })) pages.push(page);
    assert.ok(pages.length > 2, `${pages.length} pages`);
    const seen = pages.flatMap((p) => p.threads.map((e) => e.id));
    assert.equal(new Set(seen).size, seen.length, "a thread was listed twice");
    const mine = pages.flatMap((p) => p.threads.filter((e) => (e.title ?? "").includes(mark)).map((e) => e.id));
    assert.deepEqual(mine, [...ids].reverse(), "questions are listed newest first");
    assert.equal(pages[pages.length - 1].next_cursor, null);

    const replies: string[] = [];
    for (let i = 0; i < 5; i++) replies.push((await c.postReply({ parent_id: ids[0], body: `reply ${i}`, actor: "ts-test" })).id);
    const rpages = [];
    for await (const page of c.listReplies(ids[0], { limit: 2 })) rpages.push(page);
    assert.deepEqual(rpages.map((p) => p.replies.length), [2, 2, 1]);
    assert.deepEqual(rpages.flatMap((p) => p.replies.map((e) => e.id)), replies, "replies are listed oldest first");
  });

  it("finds a post by search", async () => {
    const c = await client(node.url);
    const word = "quokka" + randomUUID().replace(/-/g, "").slice(0, 10);
    const r = await c.postQuestion({ title: unique("searchable"), body: `Where does the ${word} live?`, actor: "ts-searcher" });
    assert.equal(r.outcome, "confirmed");
    // The index follows the state asynchronously; a query waits up to a
    // second for it, which a busy machine can outlast.
    const page = await waitFor("the post in the index", 60_000, async () => {
      const p = await c.search(word, { actor: "ts-searcher" });
      return p.results.length > 0 ? p : undefined;
    });
    assert.deepEqual(page.results.map((h) => h.id), [r.id]);
    assert.match(page.results[0].snippet, /«/);
    assert.ok(page.results[0].score > 0);
    await assert.rejects(c.search(word, { type: "bogus" as "reply" }), (e) => e instanceof ApiError && e.code === "invalid_request");
  });

  it("reports missing entries as not_found", async () => {
    const c = new Client({ servers: node.url });
    for (const get of [(id: string) => c.getThread(id), (id: string) => c.getReply(id)]) {
      await assert.rejects(get(randomUUID()), (e) => e instanceof ApiError && e.code === "not_found" && e.status === 404);
    }
    await assert.rejects(
      (async () => {
        for await (const page of c.listReplies(randomUUID())) void page;
      })(),
      (e) => e instanceof ApiError && e.code === "not_found",
    );
  });

  it("gives up on an unreachable server", async () => {
    const c = new Client({ servers: await closedURL(), maxAttempts: 2, baseBackoffMs: 10 });
    await assert.rejects(c.getThread(randomUUID()), (e) => e instanceof ReadError);
  });
});

describe("find by body", () => {
  it("finds a long body, newest first, with filters and paging", async () => {
    const c = await client(node.url);
    const body = `A lost post ${randomUUID()}, found by its whole body. ` + "Every word of it counts, none is dropped. ".repeat(20);
    assert.ok(body.length > 500);
    const q = await c.postQuestion({ title: unique("lost"), body, actor: "ts-finder" });
    assert.equal(q.outcome, "confirmed", JSON.stringify(q));
    const r = await c.postReply({ parent_id: q.id, body, actor: "ts-other" });
    assert.equal(r.outcome, "confirmed", JSON.stringify(r));

    const page = await c.findPosts(body, { consistency: "strong" });
    assert.deepEqual(page.entries.map((e) => e.id), [r.id, q.id], "entries are found newest first");
    assert.equal(page.next_cursor, null);
    assert.deepEqual([page.entries[1].body, page.entries[1].url], [body, q.url]);

    const ids = async (opts: Parameters<Client["findPosts"]>[1]) => (await c.findPosts(body, opts)).entries.map((e) => e.id);
    assert.deepEqual(await ids({ type: "question" }), [q.id]);
    assert.deepEqual(await ids({ type: "reply" }), [r.id]);
    assert.deepEqual(await ids({ actor: "ts-finder" }), [q.id]);
    assert.deepEqual(await ids({ parent_id: q.id }), [r.id]);
    const created = (await c.getThread(q.id)).created_at;
    assert.equal((await ids({ since: created })).length, 2);
    assert.deepEqual(await ids({ since: new Date("2999-01-01T00:00:00Z") }), []);

    // Page by page, one entry each, until next_cursor is null.
    const paged: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 5; i++) {
      const p = await c.findPosts(body, { limit: 1, cursor });
      paged.push(...p.entries.map((e) => e.id));
      cursor = p.next_cursor ?? undefined;
      if (cursor === undefined) break;
    }
    assert.deepEqual([paged, cursor], [[r.id, q.id], undefined]);
  });

  it("finds a body with quotes and dashes", async () => {
    const c = await client(node.url);
    const body = `He said "don't -retry it" -- then '-x --y' — is it -safe? (${randomUUID()})\nSecond line.`;
    const q = await c.postQuestion({ title: unique("quotes"), body, actor: "ts-finder" });
    assert.equal(q.outcome, "confirmed", JSON.stringify(q));
    assert.deepEqual((await c.findPosts(body)).entries.map((e) => e.id), [q.id]);
    // The body is normalised as a post's is: \r\n is \n.
    assert.deepEqual((await c.findPosts(body.replace("\n", "\r\n"))).entries.map((e) => e.id), [q.id]);
    // Not a search: a body that is only the start of it finds nothing.
    assert.deepEqual((await c.findPosts(body.split("\n")[0])).entries, []);
  });

  it("finds nothing for an unknown body", async () => {
    const page = await new Client({ servers: node.url }).findPosts(`No one ever posted this ${randomUUID()}.`, { consistency: "strong" });
    assert.deepEqual([page.entries, page.next_cursor], [[], null]);
  });

  it("refuses a bad query", async () => {
    const c = new Client({ servers: node.url });
    await assert.rejects(c.findPosts(""), (e) => e instanceof ApiError && e.code === "invalid_request" && e.status === 400 && /body/.test(e.detail));
    await assert.rejects(
      c.findPosts("Some body.", { type: "bogus" as "reply" }),
      (e) => e instanceof ApiError && e.code === "invalid_request" && e.status === 400 && /type/.test(e.detail),
    );
    await assert.rejects(async () => c.findPosts("Some body.", { consistency: "bogus" as "strong" }), (e) => e instanceof TypeError);
  });

  it("is retried through 503 and a lost answer", async () => {
    const body = `Found although the first answers were lost ${randomUUID()}.`;
    const q = await (await client(node.url)).postQuestion({ title: unique("retried find"), body, actor: "ts-finder" });
    assert.equal(q.outcome, "confirmed", JSON.stringify(q));
    const p = await proxy();
    p.scriptPosts("503", "drop");
    const page = await (await client(p.url)).findPosts(body);
    assert.deepEqual(page.entries.map((e) => e.id), [q.id]);
    assert.deepEqual(p.seen, ["503", "drop", "forwarded"]);
  });

  it("gives up with ReadError on an unreachable server", async () => {
    const c = new Client({ servers: await closedURL(), maxAttempts: 2, baseBackoffMs: 10 });
    await assert.rejects(c.findPosts("Some body."), (e) => e instanceof ReadError);
  });
});
