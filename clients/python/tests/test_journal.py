"""The journal on its own: its format, torn lines, pending and compaction."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import unittest

import _support  # noqa: F401  (puts the package on sys.path)

from restarea import Actor, Journal, JournalConflict, MemoryJournal, Outcome, PostRequest, Result, normalize_request


def question(rid: str, body: str = "Body.") -> PostRequest:
    return normalize_request(PostRequest(type="question", title="T", body=body, actor=Actor("j"), request_id=rid))


R1 = "6f1c1f3e-1111-4a4a-8b8b-123456789ab1"
R2 = "6f1c1f3e-1111-4a4a-8b8b-123456789ab2"


class JournalTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="restarea-pytest-journal-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.path = os.path.join(self.tmp, "a", "b", "journal.jsonl")

    def test_created_private(self) -> None:
        Journal(self.path)
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(self.path)).st_mode), 0o700)

    def test_format_is_the_go_clients(self) -> None:
        j = Journal(self.path)
        j.begin(question(R1), ["http://a"])
        j.finish(Result(Outcome.UNCONFIRMED, R1, reason="lost", attempts=2))
        with open(self.path) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([(d["v"], d["kind"], d["request_id"]) for d in lines], [(1, "pending", R1), (1, "outcome", R1)])
        self.assertEqual(lines[0]["servers"], ["http://a"])
        self.assertEqual(
            lines[0]["request"],
            {"request_id": R1, "type": "question", "title": "T", "body": "Body.", "actor": {"name": "j"}, "submission_mode": "autonomous"},
        )
        self.assertEqual(
            lines[1]["result"],
            {"outcome": "unconfirmed", "request_id": R1, "id": "", "url": "", "bookmark_url": "", "reason": "lost", "attempts": 2},
        )
        self.assertTrue(lines[0]["time"].endswith("Z"))

    def test_pending_follows_the_last_record(self) -> None:
        for j in (Journal(self.path), MemoryJournal()):
            j.begin(question(R1), ["http://a"])
            j.begin(question(R2), ["http://a"])
            j.finish(Result(Outcome.UNCONFIRMED, R1, reason="lost"))
            j.finish(Result(Outcome.CONFIRMED, R2))
            self.assertEqual([(p.request.request_id, p.reason) for p in j.pending()], [(R1, "lost")])
            j.begin(question(R1), ["http://b"])  # resumed: pending again, to the new servers
            self.assertEqual([(p.request.request_id, p.servers, p.reason) for p in j.pending()], [(R1, ("http://b",), "")])
            j.finish(Result(Outcome.CONFIRMED, R1))
            self.assertEqual(j.pending(), [])

    def test_conflict_records_nothing(self) -> None:
        for j in (Journal(self.path + "2"), MemoryJournal()):
            j.begin(question(R1), [])
            with self.assertRaises(JournalConflict):
                j.begin(question(R1, body="Other."), [])
            j.begin(question(R1), [])  # the same content again is a retry
            self.assertEqual(len(j.records()), 2)

    def test_torn_last_line_is_skipped_and_kept_alone(self) -> None:
        j = Journal(self.path)
        j.begin(question(R1), [])
        with open(self.path, "ab") as f:
            f.write(b'{"v":1,"kind":"outcome","request_id":"' + R1.encode())  # a crash mid-append
        self.assertEqual(len(j.records()), 1)
        self.assertEqual(len(j.pending()), 1)
        j.finish(Result(Outcome.CONFIRMED, R1))
        self.assertEqual([r.kind for r in j.records()], ["pending", "outcome"])
        self.assertEqual(j.pending(), [])

    def test_compact_keeps_only_pending(self) -> None:
        j = Journal(self.path)
        j.begin(question(R1), [])
        j.begin(question(R2), [])
        j.finish(Result(Outcome.CONFIRMED, R2))
        self.assertEqual(j.compact(), 2)
        self.assertEqual([(r.kind, r.request_id) for r in j.records()], [("pending", R1)])
        self.assertEqual(j.compact(), 0)
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o600)

    def test_normalised_before_it_is_recorded(self) -> None:
        r = normalize_request(
            PostRequest(type="reply", parent_id=R2.upper(), body="e\u0301\r\nx", actor=Actor("n"), request_id=R1.upper())
        )
        self.assertEqual((r.request_id, r.parent_id, r.body), (R1, R2, "\u00e9\nx"))


if __name__ == "__main__":
    unittest.main()
