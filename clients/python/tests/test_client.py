"""The client against a real node, through a proxy that loses answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import uuid
from typing import Optional

import _support
from _support import DROP, TOO_MANY, UNAVAILABLE, FaultProxy, Node, closed_url

import restarea
from restarea import Actor, ApiError, Client, Journal, MemoryJournal, Outcome, PostRequest

NODE: Node


def setUpModule() -> None:
    global NODE
    NODE = Node().start()
    NODE.finalize_upgrade()  # finding a post by its body needs cluster version 4


def tearDownModule() -> None:
    NODE.remove()


def unique(what: str) -> str:
    return f"{what} {uuid.uuid4().hex[:12]}"


class Base(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="restarea-pytest-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.journal_path = os.path.join(self.tmp, "state", "journal.jsonl")

    def client(self, servers: str, **kw: object) -> Client:
        kw.setdefault("base_backoff", 0.05)
        kw.setdefault("max_backoff", 0.5)
        return Client(servers, Journal(self.journal_path), **kw)  # type: ignore[arg-type]

    def proxy(self) -> FaultProxy:
        p = FaultProxy(NODE.url)
        self.addCleanup(p.close)
        return p

    def count_threads_titled(self, title: str) -> int:
        c = Client(NODE.url)
        return sum(1 for page in c.list_threads(limit=200, consistency="strong") for e in page.threads if e.title == title)


class PostTest(Base):
    def test_question_confirmed_and_read(self) -> None:
        c = self.client(NODE.url)
        title = unique("How do I retry a lost post?")
        res = c.post_question(title, "With the same request_id.", Actor("py-test", model="m"), submission_mode="manual")
        self.assertEqual(res.outcome, Outcome.CONFIRMED, res)
        self.assertEqual((res.attempts, res.replayed, res.reason), (1, False, ""))
        self.assertTrue(res.id and res.url.endswith("/threads/" + res.id), res)
        got = c.get_thread(res.id)
        self.assertEqual((got.title, got.body, got.actor, got.submission_mode), (title, "With the same request_id.", Actor("py-test", "m"), "manual"))
        self.assertEqual(c.pending(), [])
        kinds = [r.kind for r in Journal(self.journal_path).records()]
        self.assertEqual(kinds, ["pending", "outcome"])

    def test_lost_answer_is_retried_and_replayed(self) -> None:
        p = self.proxy()
        p.script_posts(DROP)
        c = self.client(p.url)
        title = unique("lost answer")
        res = c.post_question(title, "The first answer never arrives.", "py-test")
        self.assertEqual(res.outcome, Outcome.CONFIRMED, res)
        self.assertEqual((res.attempts, res.replayed), (2, True), res)
        self.assertEqual(p.posts_seen(), [DROP, "forwarded"])
        self.assertEqual(self.count_threads_titled(title), 1)
        # Both attempts sent the same request_id: the journal holds one post.
        recs = Journal(self.journal_path).records()
        self.assertEqual({r.request_id for r in recs}, {res.request_id})

    def test_reply_lost_answer_read_back_by_paging(self) -> None:
        c = self.client(NODE.url)
        q = c.post_question(unique("parent"), "A question with replies.", "py-test")
        self.assertEqual(q.outcome, Outcome.CONFIRMED, q)
        for i in range(3):
            self.assertEqual(c.post_reply(q.id, f"earlier reply {i}", "py-test").outcome, Outcome.CONFIRMED)
        p = self.proxy()
        p.script_posts(DROP, DROP)
        r = self.client(p.url).post_reply(q.id, "The reply whose answers were lost twice.", "py-test", title="re")
        self.assertEqual(r.outcome, Outcome.CONFIRMED, r)
        self.assertEqual((r.attempts, r.replayed), (3, True))
        self.assertTrue(r.bookmark_url.endswith("/replies/" + r.id), r)
        self.assertEqual(c.get_reply(r.id).parent_id, q.id)

    def test_429_retry_after_is_honoured(self) -> None:
        p = self.proxy()
        p.script_posts(TOO_MANY)
        start = time.monotonic()
        res = self.client(p.url).post_question(unique("rate limited"), "Waits for Retry-After.", "py-test")
        elapsed = time.monotonic() - start
        self.assertEqual(res.outcome, Outcome.CONFIRMED, res)
        self.assertEqual((res.attempts, res.replayed), (2, False))
        self.assertGreaterEqual(elapsed, 1.0, "the retry came before Retry-After: 1")

    def test_503_is_retried(self) -> None:
        p = self.proxy()
        p.script_posts(UNAVAILABLE, UNAVAILABLE)
        res = self.client(p.url).post_question(unique("unavailable"), "Retried after 503.", "py-test")
        self.assertEqual(res.outcome, Outcome.CONFIRMED, res)
        self.assertEqual(res.attempts, 3)

    def test_changed_content_under_same_request_id_is_409(self) -> None:
        rid = restarea.new_request_id()
        first = self.client(NODE.url).post_question(unique("original"), "The original body.", "py-test", request_id=rid)
        self.assertEqual(first.outcome, Outcome.CONFIRMED, first)
        # Another journal, so the server is the one that notices.
        other = Client(NODE.url, MemoryJournal())
        res = other.post_question(unique("changed"), "A different body.", "py-test", request_id=rid)
        self.assertEqual((res.outcome, res.code), (Outcome.CONFLICT, "conflict"), res)
        self.assertEqual(res.attempts, 1)
        self.assertEqual(other.pending(), [])

    def test_journal_refuses_changed_content_before_sending(self) -> None:
        p = self.proxy()
        p.drop_all = True
        c = self.client(p.url, max_attempts=1)
        rid = restarea.new_request_id()
        first = c.post_question(unique("kept pending"), "Body one.", "py-test", request_id=rid)
        self.assertEqual(first.outcome, Outcome.UNCONFIRMED, first)
        res = c.post_question(unique("kept pending"), "Body two.", "py-test", request_id=rid)
        self.assertEqual((res.outcome, res.code), (Outcome.CONFLICT, "conflict"), res)
        self.assertTrue(res.reason.startswith("not sent:"), res.reason)
        self.assertEqual(len(p.posts_seen()), 1, "the conflicting post was sent")

    def test_rejected(self) -> None:
        c = self.client(NODE.url)
        local = c.post_question("a title", "", "py-test")
        self.assertEqual((local.outcome, local.code), (Outcome.REJECTED, "invalid_request"))
        self.assertEqual(local.reason, "not sent: body is required and must not be empty")
        self.assertEqual(Journal(self.journal_path).records(), [], "a post refused locally was journaled")
        missing = c.post_reply(str(uuid.uuid4()), "A reply to nothing.", "py-test")
        self.assertEqual((missing.outcome, missing.code), (Outcome.REJECTED, "parent_not_found"), missing)
        self.assertEqual(c.pending(), [])

    def test_unconfirmed_when_the_node_is_down_then_resumed(self) -> None:
        n = Node().start()
        self.addCleanup(n.remove)
        n.stop()
        c = self.client(n.url, max_attempts=3, deadline=10)
        title = unique("posted while the node was down")
        res = c.post_question(title, "Kept pending.", "py-test")
        self.assertEqual(res.outcome, Outcome.UNCONFIRMED, res)
        self.assertEqual(res.attempts, 3)
        self.assertIn("kept pending", res.reason)
        pending = c.pending()
        self.assertEqual([pp.request.request_id for pp in pending], [res.request_id])
        self.assertEqual(pending[0].request.title, title)
        self.assertIn("the answer was lost", pending[0].reason)

        n.start()  # same data, another port: a later process resumes with its own servers
        later = self.client(n.url)
        done = later.resume()
        self.assertEqual([(r.outcome, r.request_id, r.replayed) for r in done], [(Outcome.CONFIRMED, res.request_id, False)], done)
        self.assertEqual(later.pending(), [])
        self.assertEqual(later.get_thread(done[0].id).title, title)

    def test_unconfirmed_when_every_answer_is_lost_then_resume_replays(self) -> None:
        p = self.proxy()
        p.drop_all = True
        res = self.client(p.url, max_attempts=2).post_question(unique("stored, answers lost"), "Body.", "py-test")
        self.assertEqual(res.outcome, Outcome.UNCONFIRMED, res)
        self.assertEqual(p.posts_seen(), [DROP, DROP])
        done = self.client(NODE.url).resume()
        self.assertEqual([(r.outcome, r.replayed) for r in done], [(Outcome.CONFIRMED, True)], done)

    def test_writes_disabled_is_unconfirmed_then_resumed(self) -> None:
        self.assertEqual(NODE.admin("PUT", "/settings", {"writes_disabled": True}), 200)
        try:
            c = self.client(NODE.url)
            res = c.post_question(unique("while writes are off"), "Body.", "py-test")
            self.assertEqual((res.outcome, res.code, res.attempts), (Outcome.UNCONFIRMED, "writes_disabled", 1), res)
            self.assertIn("writes are disabled", res.reason)
        finally:
            self.assertEqual(NODE.admin("PUT", "/settings", {"writes_disabled": False}), 200)
        done = c.resume()
        self.assertEqual([(r.outcome, r.request_id) for r in done], [(Outcome.CONFIRMED, res.request_id)])

    def test_hidden_and_deleted_entries(self) -> None:
        c = self.client(NODE.url)
        hidden = c.post_question(unique("to be hidden"), "Body.", "py-test")
        deleted = c.post_question(unique("to be deleted"), "Body.", "py-test")
        self.assertEqual(NODE.admin("POST", f"/entries/{hidden.id}/hide"), 200)
        self.assertEqual(NODE.admin("POST", f"/entries/{deleted.id}/delete"), 200)
        for rec in Journal(self.journal_path).records():
            if rec.kind != "pending" or rec.request is None:
                continue
            again = c.post(rec.request)  # a retry of a post whose answer was lost
            if rec.request_id == hidden.request_id:
                self.assertEqual((again.outcome, again.hidden, again.replayed, again.id), (Outcome.CONFIRMED, True, True, hidden.id), again)
            else:
                self.assertEqual((again.outcome, again.code, again.id), (Outcome.DELETED, "deleted", ""), again)
        self.assertEqual(c.pending(), [])

    def test_go_client_resumes_a_python_journal(self) -> None:
        res = self.client(closed_url(), max_attempts=1).post_question(unique("for the Go client"), "Body.", "py-test")
        self.assertEqual(res.outcome, Outcome.UNCONFIRMED)
        out = subprocess.run(
            [_support.binary(), "post", "--resume", "--server", NODE.url, "--journal", self.journal_path, "--json"],
            capture_output=True,
            timeout=180,
        )
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        got = json.loads(out.stdout.decode().strip().splitlines()[-1])
        self.assertEqual((got["outcome"], got["request_id"]), ("confirmed", res.request_id))
        self.assertEqual(Journal(self.journal_path).pending(), [], "the Go client's outcome record was not understood")

    def test_post_without_journal_raises(self) -> None:
        with self.assertRaises(restarea.JournalError):
            Client(NODE.url).post(PostRequest(type="question", title="t", body="b", actor=Actor("a")))


class ReadTest(Base):
    def test_paging_over_several_pages(self) -> None:
        c = self.client(NODE.url)
        mark = uuid.uuid4().hex[:8]
        ids = []
        for i in range(5):
            r = c.post_question(f"page {mark} {i}", "Body.", "py-test")
            self.assertEqual(r.outcome, Outcome.CONFIRMED)
            ids.append(r.id)
        pages = list(c.list_threads(limit=2))
        self.assertGreater(len(pages), 2)
        seen = [e.id for page in pages for e in page.threads]
        self.assertEqual(len(seen), len(set(seen)), "a thread was listed twice")
        mine = [e.id for page in pages for e in page.threads if mark in e.title]
        self.assertEqual(mine, list(reversed(ids)), "questions are listed newest first")
        self.assertIsNone(pages[-1].next_cursor)

        replies = [c.post_reply(ids[0], f"reply {i}", "py-test").id for i in range(5)]
        rpages = list(c.list_replies(ids[0], limit=2))
        self.assertEqual([len(p.replies) for p in rpages], [2, 2, 1])
        self.assertEqual([e.id for p in rpages for e in p.replies], replies, "replies are listed oldest first")

    def test_search_finds_a_post(self) -> None:
        c = self.client(NODE.url)
        word = "quokka" + uuid.uuid4().hex[:10]
        r = c.post_question(unique("searchable"), f"Where does the {word} live?", "py-searcher")
        self.assertEqual(r.outcome, Outcome.CONFIRMED)
        # The index follows the state asynchronously; a query waits up to a
        # second for it, which a busy machine can outlast.
        page = _support.wait_for("the post in the index", 60, lambda: (lambda p: p if p.results else None)(c.search(word, actor="py-searcher")))
        assert isinstance(page, restarea.SearchPage)
        self.assertEqual([h.entry.id for h in page.results], [r.id])
        self.assertIn("«", page.results[0].snippet)
        self.assertGreater(page.results[0].score, 0)
        with self.assertRaises(ApiError) as cm:
            c.search(word, type="bogus")
        self.assertEqual(cm.exception.code, "invalid_request")

    def test_missing_entries_are_not_found(self) -> None:
        c = Client(NODE.url)
        for get in (c.get_thread, c.get_reply):
            with self.assertRaises(ApiError) as cm:
                get(str(uuid.uuid4()))
            self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))
        with self.assertRaises(ApiError) as cm:
            list(c.list_replies(str(uuid.uuid4())))
        self.assertEqual(cm.exception.code, "not_found")

    def test_read_gives_up_when_unreachable(self) -> None:
        c = Client(closed_url(), max_attempts=2, base_backoff=0.01)
        with self.assertRaises(restarea.ReadError):
            c.get_thread(str(uuid.uuid4()))

    def test_moves_to_the_next_server(self) -> None:
        c = self.client(closed_url() + "," + NODE.url)
        res = c.post_question(unique("second server"), "The first one is down.", "py-test")
        self.assertEqual((res.outcome, res.attempts), (Outcome.CONFIRMED, 2), res)


class FindTest(Base):
    def test_finds_a_long_body_newest_first_with_filters(self) -> None:
        c = self.client(NODE.url)
        body = f"A lost post {uuid.uuid4()}, found by its whole body. " + "Every word of it counts, none is dropped. " * 20
        self.assertGreater(len(body), 500)
        q = c.post_question(unique("lost"), body, "py-finder")
        self.assertEqual(q.outcome, Outcome.CONFIRMED, q)
        r = c.post_reply(q.id, body, "py-other")
        self.assertEqual(r.outcome, Outcome.CONFIRMED, r)

        page = c.find_posts(body, consistency="strong")
        self.assertIsInstance(page, restarea.FindPage)
        self.assertEqual([e.id for e in page.entries], [r.id, q.id], "entries are found newest first")
        self.assertIsNone(page.next_cursor)
        self.assertEqual((page.entries[1].body, page.entries[1].url), (body, q.url))

        self.assertEqual([e.id for e in c.find_posts(body, type="question").entries], [q.id])
        self.assertEqual([e.id for e in c.find_posts(body, type="reply").entries], [r.id])
        self.assertEqual([e.id for e in c.find_posts(body, actor="py-finder").entries], [q.id])
        self.assertEqual([e.id for e in c.find_posts(body, parent_id=q.id).entries], [r.id])
        created = c.get_thread(q.id).created_at
        self.assertEqual(len(c.find_posts(body, since=created).entries), 2)
        self.assertEqual(c.find_posts(body, since="2999-01-01T00:00:00Z").entries, [])

        # Page by page, one entry each, until next_cursor is None.
        ids: list[str] = []
        cursor: Optional[str] = None
        for _ in range(5):
            p = c.find_posts(body, limit=1, cursor=cursor)
            ids += [e.id for e in p.entries]
            cursor = p.next_cursor
            if cursor is None:
                break
        self.assertEqual((ids, cursor), ([r.id, q.id], None))

    def test_finds_a_body_with_quotes_and_dashes(self) -> None:
        c = self.client(NODE.url)
        body = f'He said "don\'t -retry it" -- then \'-x --y\' — is it -safe? ({uuid.uuid4()})\nSecond line.'
        q = c.post_question(unique("quotes"), body, "py-finder")
        self.assertEqual(q.outcome, Outcome.CONFIRMED, q)
        self.assertEqual([e.id for e in c.find_posts(body).entries], [q.id])
        # The body is normalised as a post's is: \r\n is \n.
        self.assertEqual([e.id for e in c.find_posts(body.replace("\n", "\r\n")).entries], [q.id])
        # Not a search: a body that is only the start of it finds nothing.
        self.assertEqual(c.find_posts(body.split("\n")[0]).entries, [])

    def test_finds_nothing_for_an_unknown_body(self) -> None:
        page = Client(NODE.url).find_posts(f"No one ever posted this {uuid.uuid4()}.", consistency="strong")
        self.assertEqual((page.entries, page.next_cursor), ([], None))

    def test_refuses_a_bad_query(self) -> None:
        c = Client(NODE.url)
        with self.assertRaises(ApiError) as cm:
            c.find_posts("")
        self.assertEqual((cm.exception.code, cm.exception.status), ("invalid_request", 400))
        self.assertIn("body", cm.exception.message)
        with self.assertRaises(ApiError) as cm:
            c.find_posts("Some body.", type="bogus")
        self.assertEqual((cm.exception.code, cm.exception.status), ("invalid_request", 400))
        self.assertIn("type", cm.exception.message)
        with self.assertRaises(ValueError):
            c.find_posts("Some body.", consistency="bogus")

    def test_retried_through_503_and_a_lost_answer(self) -> None:
        c = self.client(NODE.url)
        body = f"Found although the first answers were lost {uuid.uuid4()}."
        q = c.post_question(unique("retried find"), body, "py-finder")
        self.assertEqual(q.outcome, Outcome.CONFIRMED, q)
        p = self.proxy()
        p.script_posts(UNAVAILABLE, DROP)
        page = self.client(p.url).find_posts(body)
        self.assertEqual([e.id for e in page.entries], [q.id])
        self.assertEqual(p.posts_seen(), [UNAVAILABLE, DROP, "forwarded"])

    def test_gives_up_with_read_error_when_unreachable(self) -> None:
        c = Client(closed_url(), max_attempts=2, base_backoff=0.01)
        with self.assertRaises(restarea.ReadError):
            c.find_posts("Some body.")


if __name__ == "__main__":
    unittest.main()
