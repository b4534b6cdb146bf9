// The journal on its own: its format, torn lines, pending and compaction.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, describe, it } from "node:test";

import { FileJournal, JournalConflictError, MemoryJournal, normalizeRequest, type Journal, type NormalizedPost, type Result } from "../src/index";
import { tempDir } from "./support";

const R1 = "6f1c1f3e-1111-4a4a-8b8b-123456789ab1";
const R2 = "6f1c1f3e-1111-4a4a-8b8b-123456789ab2";

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function file(): string {
  const d = tempDir("journal");
  dirs.push(d);
  return path.join(d, "a", "b", "journal.jsonl");
}

function question(rid: string, body = "Body."): NormalizedPost {
  return normalizeRequest({ type: "question", title: "T", body, actor: { name: "j" }, submission_mode: "autonomous", request_id: rid });
}

function result(outcome: Result["outcome"], request_id: string, reason = ""): Result {
  return { outcome, request_id, id: "", url: "", bookmark_url: "", reason, attempts: 1 };
}

describe("journal", () => {
  it("is created private", async () => {
    const f = file();
    await FileJournal.open(f);
    assert.equal(fs.statSync(f).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.dirname(f)).mode & 0o777, 0o700);
  });

  it("writes the Go client's format", async () => {
    const f = file();
    const j = await FileJournal.open(f);
    await j.begin(question(R1), ["http://a"]);
    await j.finish({ ...result("unconfirmed", R1, "lost"), attempts: 2 });
    const lines = fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((d) => [d.v, d.kind, d.request_id]), [[1, "pending", R1], [1, "outcome", R1]]);
    assert.deepEqual(lines[0].servers, ["http://a"]);
    assert.equal(
      JSON.stringify(lines[0].request),
      JSON.stringify({ request_id: R1, type: "question", title: "T", body: "Body.", actor: { name: "j" }, submission_mode: "autonomous" }),
    );
    assert.match(lines[0].time, /Z$/);
  });

  it("holds a post pending until its last record is final", async () => {
    for (const j of [await FileJournal.open(file()), new MemoryJournal()] as Journal[]) {
      await j.begin(question(R1), ["http://a"]);
      await j.begin(question(R2), ["http://a"]);
      await j.finish(result("unconfirmed", R1, "lost"));
      await j.finish(result("confirmed", R2));
      assert.deepEqual((await j.pending()).map((p) => [p.request.request_id, p.reason]), [[R1, "lost"]]);
      await j.begin(question(R1), ["http://b"]); // resumed: pending again, to the new servers
      assert.deepEqual((await j.pending()).map((p) => [p.request.request_id, p.servers, p.reason]), [[R1, ["http://b"], ""]]);
      await j.finish(result("confirmed", R1));
      assert.deepEqual(await j.pending(), []);
    }
  });

  it("records nothing on a conflict", async () => {
    for (const j of [await FileJournal.open(file()), new MemoryJournal()] as Journal[]) {
      await j.begin(question(R1), []);
      await assert.rejects(j.begin(question(R1, "Other."), []), (e) => e instanceof JournalConflictError);
      await j.begin(question(R1), []); // the same content again is a retry
      assert.equal((await j.records()).length, 2);
    }
  });

  it("skips a torn last line and keeps it alone", async () => {
    const f = file();
    const j = await FileJournal.open(f);
    await j.begin(question(R1), []);
    fs.appendFileSync(f, `{"v":1,"kind":"outcome","request_id":"${R1}`); // a crash mid-append
    assert.equal((await j.records()).length, 1);
    assert.equal((await j.pending()).length, 1);
    await j.finish(result("confirmed", R1));
    assert.deepEqual((await j.records()).map((r) => r.kind), ["pending", "outcome"]);
    assert.deepEqual(await j.pending(), []);
  });

  it("compacts to the pending posts", async () => {
    const f = file();
    const j = await FileJournal.open(f);
    await j.begin(question(R1), []);
    await j.begin(question(R2), []);
    await j.finish(result("confirmed", R2));
    assert.equal(await j.compact(), 2);
    assert.deepEqual((await j.records()).map((r) => [r.kind, r.request_id]), [["pending", R1]]);
    assert.equal(await j.compact(), 0);
    assert.equal(fs.statSync(f).mode & 0o777, 0o600);
  });

  it("serialises concurrent appends of one process", async () => {
    const f = file();
    const js = [await FileJournal.open(f), await FileJournal.open(f)];
    const ids = Array.from({ length: 20 }, (_, i) => `6f1c1f3e-1111-4a4a-8b8b-1234567890${String(i).padStart(2, "0")}`);
    await Promise.all(ids.map((id, i) => js[i % 2].begin(question(id), [])));
    const j = js[0];
    assert.deepEqual((await j.records()).map((r) => r.request_id).sort(), [...ids].sort());
  });

  it("normalises before recording", () => {
    const r = normalizeRequest({
      type: "reply",
      parent_id: R2.toUpperCase(),
      body: "e\u0301\r\nx",
      actor: { name: "n" },
      submission_mode: "manual",
      request_id: R1.toUpperCase(),
    });
    assert.deepEqual([r.request_id, r.parent_id, r.body], [R1, R2, "\u00e9\nx"]);
  });
});
