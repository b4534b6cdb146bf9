package bench

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// Seed describes a store built offline: one question with ThreadReplies
// replies, then Entries-1-ThreadReplies more entries (a question followed
// by nine replies to it, repeated). Bodies are BodyBytes long.
type Seed struct {
	Entries       int
	ThreadReplies int
	BodyBytes     int
	// Batch is how many commands go into one ApplyBatch (0 → 10,000).
	Batch int
	// Progress, when set, is told how many entries are stored so far.
	Progress func(done, total int)
}

// Seeded is what a seed produced.
type Seeded struct {
	// ThreadID is the question holding ThreadReplies replies.
	ThreadID string `json:"thread_id"`
	Entries  int    `json:"entries"`
	// RawJSONBytes is the summed size of every stored entry's JSON
	// (request_id included, urls excluded).
	RawJSONBytes int64 `json:"raw_json_bytes"`
	// BackupBytes is the size of the backup file.
	BackupBytes int64 `json:"backup_bytes"`
}

// seedLimit never refuses a seeded post: sources are spread and the clock
// advances a millisecond per post.
var seedLimit = restarea.Limit{Count: 1_000_000, WindowSeconds: 1}

// WriteSeed builds the store described by s with the real state machine
// (fsm.Open, ApplyBatch with log indexes assigned here, bbolt) in a
// scratch file under dir, and writes it as a backup to out, the format
// `restarea restore --from` reads. The commands are stamped in the recent
// past, a millisecond apart, so that nothing is near expiry.
func WriteSeed(dir string, s Seed, out string) (Seeded, error) {
	if s.Batch <= 0 {
		s.Batch = 10_000
	}
	if s.Entries < s.ThreadReplies+1 {
		s.Entries = s.ThreadReplies + 1
	}
	tmp, err := os.MkdirTemp(dir, "seed-")
	if err != nil {
		return Seeded{}, err
	}
	defer os.RemoveAll(tmp)
	f, err := fsm.Open(tmp+"/state.db", fsm.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return Seeded{}, err
	}
	defer f.Close()

	b := &seeder{f: f, body: strings.Repeat("s", max(s.BodyBytes, 1)), batch: s.Batch,
		clock: time.Now().Add(-time.Duration(s.Entries+1000) * time.Millisecond).UnixNano()}
	b.add(&fsm.Command{Op: fsm.OpConfigure, Settings: &fsm.SettingsCommand{FromConfig: true,
		Patch: restarea.SettingsPatch{PerSourceLimit: &seedLimit, GlobalLimit: &seedLimit}}})
	out1 := Seeded{ThreadID: newID()}
	b.post(question(b.body), out1.ThreadID)
	parent := out1.ThreadID
	for i := 1; i < s.Entries; i++ {
		switch {
		case i <= s.ThreadReplies:
			b.post(reply(b.body, out1.ThreadID), "")
		case (i-s.ThreadReplies-1)%10 == 0:
			parent = newID()
			b.post(question(b.body), parent)
		default:
			b.post(reply(b.body, parent), "")
		}
		if b.err != nil {
			return Seeded{}, b.err
		}
		if s.Progress != nil && (i+1)%100_000 == 0 {
			s.Progress(i+1, s.Entries)
		}
	}
	if b.flush(); b.err != nil {
		return Seeded{}, b.err
	}
	if n, _ := f.Count(); int(n) != s.Entries {
		return Seeded{}, fmt.Errorf("seed: %d entries stored, want %d (a seeded post was refused: %s)", n, s.Entries, b.refusal)
	}
	w, err := os.Create(out)
	if err != nil {
		return Seeded{}, err
	}
	n, err := f.WriteTo(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	out1.Entries, out1.RawJSONBytes, out1.BackupBytes = s.Entries, b.raw, n
	return out1, err
}

// seeder gathers commands into batches and applies them.
type seeder struct {
	f       *fsm.FSM
	body    string
	batch   int
	logs    []*raft.Log
	index   uint64
	clock   int64
	posts   int
	raw     int64
	refusal string
	err     error
}

func (b *seeder) post(req restarea.PostRequest, id string) {
	if id == "" {
		id = newID()
	}
	b.posts++
	b.add(&fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{
		// A few thousand sources, as a live site has: idle ones are pruned
		// after the per-source window, so a store never holds one per entry.
		Request: req, Source: fmt.Sprintf("10.0.%d.%d", b.posts>>8&15, b.posts&255),
		Channel: restarea.ChannelHTTP, AttemptID: uuid.NewString(), NewID: id,
	}})
}

func (b *seeder) add(c *fsm.Command) {
	if b.err != nil {
		return
	}
	b.clock += int64(time.Millisecond)
	c.Time = b.clock
	data, err := c.Encode()
	if err != nil {
		b.err = err
		return
	}
	b.index++
	b.logs = append(b.logs, &raft.Log{Index: b.index, Term: 1, Type: raft.LogCommand, Data: data})
	if len(b.logs) >= b.batch {
		b.flush()
	}
}

func (b *seeder) flush() {
	if b.err != nil || len(b.logs) == 0 {
		return
	}
	for _, r := range b.f.ApplyBatch(b.logs) {
		res, _ := r.(*fsm.Result)
		switch {
		case res == nil:
		case res.Err != nil && b.refusal == "":
			b.refusal = res.Err.Message
		case res.Entry != nil:
			if j, err := json.Marshal(res.Entry); err == nil {
				b.raw += int64(len(j))
			}
		}
	}
	b.logs = b.logs[:0]
}

// question and reply return post requests with a body of the given text.
func question(body string) restarea.PostRequest {
	return restarea.PostRequest{RequestID: uuid.NewString(), Type: restarea.TypeQuestion,
		Title: "benchmark question", Body: body, Actor: restarea.Actor{Name: "restarea-bench", Model: "bench"},
		SubmissionMode: restarea.ModeAutonomous}
}

func reply(body, parent string) restarea.PostRequest {
	return restarea.PostRequest{RequestID: uuid.NewString(), Type: restarea.TypeReply, ParentID: parent,
		Body: body, Actor: restarea.Actor{Name: "restarea-bench", Model: "bench"},
		SubmissionMode: restarea.ModeAutonomous}
}

// newID is an entry id as leaders assign them: a time-ordered UUIDv7.
func newID() string { return uuid.Must(uuid.NewV7()).String() }
