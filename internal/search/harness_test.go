package search

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/testkit"
)

// board is a real state machine fed by hand-made log entries, with an
// index following it the way a node wires it (Applied after each batch).
type board struct {
	t     testing.TB
	dir   string
	f     *fsm.FSM
	x     *Index
	index uint64
	now   time.Time
	wait  time.Duration // how long waitIndexed waits
}

func newBoard(t testing.TB) *board {
	t.Helper()
	b := newBoardAt(t, t.TempDir())
	t.Cleanup(b.close)
	return b
}

// newBoardAt makes a board in dir; the caller closes it.
func newBoardAt(t testing.TB, dir string) *board {
	t.Helper()
	f, err := fsm.Open(filepath.Join(dir, "state.db"), fsm.Options{InitialMmapSize: 1 << 24})
	if err != nil {
		t.Fatal(err)
	}
	b := &board{t: t, dir: dir, f: f, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), wait: 20 * time.Second}
	b.open()
	return b
}

func (b *board) close() {
	if b.x != nil {
		b.x.Close()
	}
	b.f.Close()
}

// open (re)opens the index over the board's state.
func (b *board) open() {
	b.t.Helper()
	x, err := Open(Config{Dir: filepath.Join(b.dir, "search"), State: b.f, BatchSize: 50})
	if err != nil {
		b.t.Fatal(err)
	}
	b.x = x
}

func (b *board) apply(cmds ...fsm.Command) []*fsm.Result {
	b.t.Helper()
	logs := make([]*raft.Log, len(cmds))
	for i, c := range cmds {
		if c.Time == 0 {
			b.now = b.now.Add(time.Second)
			c.Time = b.now.UnixNano()
		}
		data, err := c.Encode()
		if err != nil {
			b.t.Fatal(err)
		}
		b.index++
		logs[i] = &raft.Log{Index: b.index, Type: raft.LogCommand, Data: data}
	}
	out := b.f.ApplyBatch(logs)
	if b.x != nil { // nil: a board measured without its index
		b.x.Applied(logs)
	}
	res := make([]*fsm.Result, len(out))
	for i, o := range out {
		res[i] = o.(*fsm.Result)
		if err := res[i].Error(); err != nil {
			b.t.Fatalf("command %d refused: %v", i, err)
		}
	}
	return res
}

func postCommand(req restarea.PostRequest) fsm.Command {
	return fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{
		Request: req, Source: "operator", Channel: restarea.ChannelHTTP,
		AttemptID: uuid.NewString(), NewID: uuid.NewString(), ByOperator: true,
	}}
}

func (b *board) request(typ, parent, title, body, actor string) restarea.PostRequest {
	b.t.Helper()
	r, err := restarea.PostRequest{
		RequestID: uuid.NewString(), Type: typ, ParentID: parent, Title: title, Body: body,
		Actor: restarea.Actor{Name: actor}, SubmissionMode: restarea.ModeAutonomous,
	}.Normalize()
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// question posts a question and returns its id.
func (b *board) question(title, body, actor string) string {
	b.t.Helper()
	return b.apply(postCommand(b.request(restarea.TypeQuestion, "", title, body, actor)))[0].Entry.ID
}

func (b *board) reply(parent, body, actor string) string {
	b.t.Helper()
	return b.apply(postCommand(b.request(restarea.TypeReply, parent, "", body, actor)))[0].Entry.ID
}

// search runs a query that must succeed.
func (b *board) search(q restarea.SearchQuery) restarea.SearchPage {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := b.x.Search(ctx, q)
	if err != nil {
		b.t.Fatalf("search %+v: %v", q, err)
	}
	return p
}

// waitIndexed waits until the index has caught up with the state.
func (b *board) waitIndexed() {
	b.t.Helper()
	testkit.Eventually(b.t, b.wait, "the index to catch up with the state", func() error {
		if b.x.Watermark() < b.f.AppliedIndex() || b.x.Rebuilding() {
			return fmt.Errorf("index at %d, state at %d", b.x.Watermark(), b.f.AppliedIndex())
		}
		return nil
	})
}

func ids(p restarea.SearchPage) []string {
	out := make([]string, len(p.Results))
	for i, r := range p.Results {
		out[i] = r.ID
	}
	return out
}
