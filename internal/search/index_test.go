package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit"
)

func TestStemmingAndSnippet(t *testing.T) {
	b := newBoard(t)
	id := b.question("Duplicate entries", "I posted the same question twice after a timeout.", "alice")
	b.question("Unrelated", "Something about caching layers.", "bob")
	b.waitIndexed()

	p := b.search(restarea.SearchQuery{Q: "posting"})
	if got := ids(p); !slices.Equal(got, []string{id}) {
		t.Fatalf("posting found %v, want [%s]", got, id)
	}
	r := p.Results[0]
	if !strings.Contains(r.Snippet, "«posted»") || r.Score <= 0 {
		t.Fatalf("snippet %q score %v", r.Snippet, r.Score)
	}
	if r.RequestID != "" || r.Title != "Duplicate entries" || r.Actor.Name != "alice" {
		t.Fatalf("result is not the public entry: %+v", r.Entry)
	}
	if p.NextCursor != nil {
		t.Fatalf("one result, yet a cursor")
	}
}

func TestJapanese(t *testing.T) {
	b := newBoard(t)
	id := b.question("接続エラー", "接続が切れたら、しばらく待ってから再試行してください。", "agent-ja")
	b.question("別の話題", "キャッシュの設定について。", "agent-ja")
	b.waitIndexed()

	p := b.search(restarea.SearchQuery{Q: "再試行"})
	if got := ids(p); !slices.Equal(got, []string{id}) {
		t.Fatalf("再試行 found %v, want [%s]", got, id)
	}
	if s := p.Results[0].Snippet; !strings.Contains(s, "«再試行»") {
		t.Fatalf("snippet %q does not mark 再試行", s)
	}
	// Title text is searched too.
	if got := ids(b.search(restarea.SearchQuery{Q: "接続エラー"})); len(got) == 0 || got[0] != id {
		t.Fatalf("title search found %v", got)
	}
}

// The find_my_post procedure: the exact body, the actor name and a time
// window find one's own post first.
func TestFindMyPost(t *testing.T) {
	b := newBoard(t)
	start := b.now
	for i := range 20 {
		b.question(fmt.Sprintf("Retry question %d", i), fmt.Sprintf("How should a client retry a post %d times after a timeout?", i), "others")
	}
	body := "How should a client retry a post after a timeout without creating a duplicate?"
	mine := b.question("Retry after timeout", body, "careful-agent")
	b.reply(mine, body, "someone-else") // same text, another actor
	b.waitIndexed()

	p := b.search(restarea.SearchQuery{Q: body})
	if len(p.Results) == 0 || (p.Results[0].ID != mine && p.Results[0].Body != body) {
		t.Fatalf("exact body does not rank first: %v", ids(p))
	}
	p = b.search(restarea.SearchQuery{Q: body, Actor: "careful-agent", Since: start})
	if got := ids(p); !slices.Equal(got, []string{mine}) {
		t.Fatalf("find_my_post found %v, want [%s]", got, mine)
	}
	if got := ids(b.search(restarea.SearchQuery{Q: body, Actor: "careful-agent", Since: b.now.Add(time.Hour)})); len(got) != 0 {
		t.Fatalf("since after the post still found %v", got)
	}
	if got := b.search(restarea.SearchQuery{Q: body, Type: restarea.TypeReply}); len(got.Results) != 1 || got.Results[0].Actor.Name != "someone-else" {
		t.Fatalf("type=reply found %v", ids(got))
	}
}

func TestPaging(t *testing.T) {
	b := newBoard(t)
	want := map[string]bool{}
	for i := range 27 {
		want[b.question(fmt.Sprintf("Timeout %d", i), "a timeout happened", "a")] = true
	}
	b.waitIndexed()
	seen := map[string]bool{}
	q := restarea.SearchQuery{Q: "timeout", Limit: 10}
	pages := 0
	for {
		p := b.search(q)
		pages++
		for _, id := range ids(p) {
			if seen[id] {
				t.Fatalf("page %d repeats %s", pages, id)
			}
			seen[id] = true
		}
		if p.NextCursor == nil {
			break
		}
		q.Cursor = *p.NextCursor
	}
	if pages != 3 || len(seen) != len(want) {
		t.Fatalf("%d pages, %d results; want 3 pages, %d", pages, len(seen), len(want))
	}
	for _, c := range []string{"!!", "bzEwMDAwMDAw", "eDU"} {
		if _, err := b.x.Search(context.Background(), restarea.SearchQuery{Q: "timeout", Cursor: c}); restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
			t.Fatalf("cursor %q: %v", c, err)
		}
	}
}

func TestValidation(t *testing.T) {
	b := newBoard(t)
	for _, q := range []restarea.SearchQuery{
		{Q: ""}, {Q: "   "}, {Q: strings.Repeat("x", 501)}, {Q: "a", Type: "answer"},
		{Q: "a", Limit: 51}, {Q: "a", Limit: -1}, {Q: "\xff"},
	} {
		_, err := b.x.Search(context.Background(), q)
		if restarea.ErrorCode(err) != restarea.CodeInvalidRequest {
			t.Errorf("%+v: %v, want invalid_request", q, err)
		}
	}
}

// Hidden, deleted and expired entries never appear, even right after the
// change, before the indexer has seen it.
func TestNeverShowsHiddenDeletedExpired(t *testing.T) {
	b := newBoard(t)
	q := b.question("Flaky network", "the network is flaky today", "a")
	r := b.reply(q, "flaky here too", "b")
	gone := b.question("Flaky disk", "the disk is flaky", "c")
	b.waitIndexed()
	find := func() []string { return ids(b.search(restarea.SearchQuery{Q: "flaky"})) }
	if got := find(); len(got) != 3 {
		t.Fatalf("found %v before any change", got)
	}

	b.apply(fsm.Command{Op: fsm.OpHide, EntryID: q})
	if got := find(); !slices.Equal(got, []string{gone}) {
		t.Fatalf("after hiding the question (and so its reply): %v", got)
	}
	b.apply(fsm.Command{Op: fsm.OpUnhide, EntryID: q})
	if got := find(); len(got) != 3 {
		t.Fatalf("after unhiding: %v", got)
	}
	b.apply(fsm.Command{Op: fsm.OpHide, EntryID: r})
	if got := find(); slices.Contains(got, r) || len(got) != 2 {
		t.Fatalf("after hiding the reply: %v", got)
	}

	before, _ := b.x.docCount()
	b.apply(fsm.Command{Op: fsm.OpDelete, EntryID: gone})
	if got := find(); slices.Contains(got, gone) {
		t.Fatalf("deleted entry found: %v", got)
	}
	waitDocs(t, b.x, before-1) // and its text leaves the index

	// Expire everything older than one minute of state time.
	b.now = b.now.Add(48 * time.Hour)
	b.apply(fsm.Command{Op: fsm.OpExpire, Expire: &fsm.ExpireCommand{Retention: time.Hour, MaxItems: 100}})
	if got := find(); len(got) != 0 {
		t.Fatalf("expired entries found: %v", got)
	}
	waitDocs(t, b.x, 0)
}

func waitDocs(t *testing.T, x *Index, want uint64) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%d documents in the index", want), func() error {
		n, err := x.docCount()
		if err == nil && n != want {
			err = fmt.Errorf("%d documents", n)
		}
		return err
	})
}

func TestRebuildWhenMissing(t *testing.T) {
	b := newBoard(t)
	var want []string
	for i := range 120 { // more than a batch of 50
		want = append(want, b.question(fmt.Sprintf("Rebuild %d", i), "rebuild me", "a"))
	}
	b.waitIndexed()
	if err := b.x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(b.dir, "search")); err != nil {
		t.Fatal(err)
	}
	b.open()
	if !b.x.Rebuilding() && b.x.Watermark() == 0 {
		t.Fatal("a missing index is neither rebuilding nor rebuilt")
	}
	_, err := b.x.Search(context.Background(), restarea.SearchQuery{Q: "rebuild"})
	if err != nil && (restarea.ErrorCode(err) != restarea.CodeUnavailable || restarea.RetryAfterSeconds(err) == 0) {
		t.Fatalf("search while rebuilding: %v, want 503 with Retry-After", err)
	}
	b.waitIndexed()
	assertAll(t, b, "rebuild", want)

	// A reopened index resumes from its watermark instead of rebuilding.
	b.x.Close()
	b.open()
	if b.x.Rebuilding() || b.x.Watermark() != b.f.AppliedIndex() {
		t.Fatalf("reopened index rebuilding=%v watermark=%d applied=%d", b.x.Rebuilding(), b.x.Watermark(), b.f.AppliedIndex())
	}
}

// assertAll pages through q and checks it finds exactly want.
func assertAll(t *testing.T, b *board, q string, want []string) {
	t.Helper()
	var got []string
	sq := restarea.SearchQuery{Q: q, Limit: 50}
	for {
		p := b.search(sq)
		got = append(got, ids(p)...)
		if p.NextCursor == nil {
			break
		}
		sq.Cursor = *p.NextCursor
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%q found %d entries, want %d", q, len(got), len(want))
	}
}

// A snapshot restore replaces the state with another history: the index
// is rebuilt from the restored state.
func TestRebuildOnRestore(t *testing.T) {
	b := newBoard(t)
	b.question("Old history", "only in the old state: walrus", "a")
	b.waitIndexed()

	other := newBoard(t)
	kept := other.question("New history", "only in the restored state: narwhal", "z")
	var snap bytes.Buffer
	if _, err := other.f.WriteTo(&snap); err != nil {
		t.Fatal(err)
	}

	if err := b.x.Restoring(); err != nil {
		t.Fatal(err)
	}
	if err := b.f.Restore(io.NopCloser(&snap)); err != nil {
		t.Fatal(err)
	}
	b.x.Notify()
	b.waitIndexed()
	if got := ids(b.search(restarea.SearchQuery{Q: "walrus"})); len(got) != 0 {
		t.Fatalf("old history still found: %v", got)
	}
	if got := ids(b.search(restarea.SearchQuery{Q: "narwhal"})); !slices.Equal(got, []string{kept}) {
		t.Fatalf("restored state not indexed: %v", got)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "search", rebuildMarker)); !os.IsNotExist(err) {
		t.Fatalf("rebuild marker left behind: %v", err)
	}
}

// A marker left by a restore the process did not live to index, or an
// index ahead of its state, makes Open rebuild.
func TestOpenRebuildsStaleIndex(t *testing.T) {
	b := newBoard(t)
	b.question("Stale", "stale index", "a")
	b.waitIndexed()
	b.x.Close()
	if err := os.WriteFile(filepath.Join(b.dir, "search", rebuildMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.open()
	b.waitIndexed()
	if got := ids(b.search(restarea.SearchQuery{Q: "stale"})); len(got) != 1 {
		t.Fatalf("after marker rebuild: %v", got)
	}

	// An index ahead of the state: a fresh state file under an old index.
	b.x.Close()
	f2, err := fsm.Open(filepath.Join(b.dir, "fresh.db"), fsm.Options{InitialMmapSize: 1 << 24})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	x, err := Open(Config{Dir: filepath.Join(b.dir, "search"), State: f2})
	if err != nil {
		t.Fatal(err)
	}
	b.x = x
	testkit.Eventually(t, 30*time.Second, "the rebuild to end", func() error {
		if x.Rebuilding() {
			return errors.New("rebuilding")
		}
		return nil
	})
	if n, _ := x.docCount(); n != 0 || x.Watermark() != 0 {
		t.Fatalf("index ahead of an empty state kept %d documents, watermark %d", n, x.Watermark())
	}
}
