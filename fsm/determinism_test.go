package fsm_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	bolt "go.etcd.io/bbolt"
)

// gen makes a random but reproducible command history.
type gen struct {
	t    *testing.T
	rng  *rand.Rand
	now  int64
	reqs []restarea.PostRequest // every request posted so far
	ids  []string               // every id proposed so far
}

func (g *gen) id() string {
	u, err := uuid.NewRandomFromReader(g.rng)
	if err != nil {
		g.t.Fatal(err)
	}
	return u.String()
}

func (g *gen) pick(s []string) string {
	if len(s) == 0 {
		return g.id()
	}
	return s[g.rng.Intn(len(s))]
}

func (g *gen) post(req restarea.PostRequest) fsm.Command {
	sources := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "2001:db8::1"}
	c := fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{
		Request: req, Source: sources[g.rng.Intn(len(sources))],
		Channel: restarea.ChannelHTTP, AttemptID: g.id(), NewID: g.id(),
		ByOperator: g.rng.Intn(20) == 0,
	}}
	if g.rng.Intn(2) == 0 {
		c.Post.Channel = restarea.ChannelMCP
	}
	g.ids = append(g.ids, c.Post.NewID)
	return c
}

func (g *gen) command() fsm.Command {
	// The clock mostly moves forward, sometimes a lot, sometimes back.
	switch n := g.rng.Intn(20); {
	case n == 0:
		g.now -= int64(time.Minute)
	case n == 1:
		g.now += int64(10 * day)
	default:
		g.now += int64(time.Duration(g.rng.Intn(30)) * time.Second)
	}
	c := g.next()
	c.Time = g.now
	return c
}

func (g *gen) next() fsm.Command {
	switch n := g.rng.Intn(100); {
	case n < 25:
		req := restarea.PostRequest{
			RequestID: g.id(), Type: restarea.TypeQuestion, Title: fmt.Sprintf("question %d", n),
			Body: "body", Actor: restarea.Actor{Name: "agent"}, SubmissionMode: restarea.ModeAutonomous,
		}
		g.reqs = append(g.reqs, normalize(g.t, req))
		return g.post(g.reqs[len(g.reqs)-1])
	case n < 50:
		req := restarea.PostRequest{
			RequestID: g.id(), Type: restarea.TypeReply, ParentID: g.pick(g.ids),
			Body: fmt.Sprintf("reply %d", n), Actor: restarea.Actor{Name: "agent", Trigger: "test"},
			SubmissionMode: restarea.ModeAssisted,
		}
		g.reqs = append(g.reqs, normalize(g.t, req))
		return g.post(g.reqs[len(g.reqs)-1])
	case n < 65 && len(g.reqs) > 0: // replay
		return g.post(g.reqs[g.rng.Intn(len(g.reqs))])
	case n < 72 && len(g.reqs) > 0: // conflict
		req := g.reqs[g.rng.Intn(len(g.reqs))]
		req.Body += " (edited)"
		return g.post(req)
	case n < 78:
		return fsm.Command{Op: fsm.OpHide, EntryID: g.pick(g.ids), Origin: "203.0.113.7"}
	case n < 82:
		return fsm.Command{Op: fsm.OpUnhide, EntryID: g.pick(g.ids)}
	case n < 88:
		return fsm.Command{Op: fsm.OpDelete, EntryID: g.pick(g.ids), Origin: "2001:db8::7"}
	case n < 92:
		return fsm.Command{Op: fsm.OpExpire, Expire: &fsm.ExpireCommand{
			Retention: 15 * day, TombstoneRetention: 5 * day, MaxItems: 1 + g.rng.Intn(5),
		}}
	case n < 96:
		p := restarea.SettingsPatch{
			PerSourceLimit: &restarea.Limit{Count: 1 + g.rng.Intn(6), WindowSeconds: 60},
			GlobalLimit:    &restarea.Limit{Count: 1 + g.rng.Intn(40), WindowSeconds: 3600},
		}
		return fsm.Command{Op: fsm.OpConfigure, Settings: &fsm.SettingsCommand{Patch: p, FromConfig: true}}
	default:
		p := restarea.SettingsPatch{WritesDisabled: ptr(g.rng.Intn(3) == 0)}
		if g.rng.Intn(2) == 0 {
			p.PerSourceLimit = &restarea.Limit{Count: g.rng.Intn(8), WindowSeconds: 30} // 0 is refused
		}
		return fsm.Command{Op: fsm.OpSettings, Settings: &fsm.SettingsCommand{Patch: p}}
	}
}

// The same commands give the same results and the same state, whether
// applied one by one or in batches of any size.
func TestDeterminism(t *testing.T) {
	seen := map[int]int{} // statuses of all results, over all seeds
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := &gen{t: t, rng: rand.New(rand.NewSource(seed)), now: t0}
			logs := make([]*raft.Log, 200)
			for i := range logs {
				c := g.command()
				if i == 40 {
					// The audit trail starts with log format 3: both
					// sides of the switch replay the same.
					c = fsm.Command{Op: fsm.OpEnableLogV3, Time: c.Time}
				}
				if i == 100 || i == 101 {
					// Checksums start with cluster version 3: every node
					// seals the same values (compared byte for byte below).
					c = fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: i - 98, Time: c.Time}
				}
				if i == 150 {
					// Body fingerprints start with cluster version 4, and
					// the entries stored before are indexed by backfills
					// between the posts.
					c = fsm.Command{Op: fsm.OpClusterVersion, ClusterVersion: 4, Time: c.Time}
				}
				if i > 150 && i%10 == 0 {
					c = fsm.Command{Op: fsm.OpBackfill, Backfill: &fsm.BackfillCommand{MaxItems: 1 + i%7}, Time: c.Time}
				}
				data, err := c.Encode()
				if err != nil {
					t.Fatal(err)
				}
				logs[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}
			}

			one, many := newHarness(t), newHarness(t)
			var got1, got2 []interface{}
			for _, l := range logs {
				got1 = append(got1, one.f.Apply(l))
			}
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < len(logs); {
				n := min(1+rng.Intn(16), len(logs)-i)
				got2 = append(got2, many.f.ApplyBatch(logs[i:i+n])...)
				i += n
			}
			j1, _ := json.Marshal(got1)
			j2, _ := json.Marshal(got2)
			if string(j1) != string(j2) {
				t.Fatalf("results differ:\n%s\n%s", j1, j2)
			}
			if d1, d2 := dump(t, one.f), dump(t, many.f); d1 != d2 {
				t.Fatalf("states differ:\n%s\n%s", d1, d2)
			}
			if one.f.ClusterVersion() != 4 {
				t.Fatalf("cluster version %d, want 4", one.f.ClusterVersion())
			}
			if r1, r2 := rawState(t, one.f), rawState(t, many.f); r1 != r2 {
				t.Fatalf("stored bytes differ:\n%s\n%s", r1, r2)
			}
			if trail := auditTrail(t, one.f, 50); len(trail) == 0 || trail[len(trail)-1].Seq <= 41 {
				t.Fatalf("audit trail %+v: want records, all after the switch at index 41", trail)
			}

			for _, r := range got1 {
				seen[status(asResult(t, r))]++
			}
		})
	}
	// The histories must exercise the rules, not only create entries.
	t.Logf("statuses: %v", seen)
	for _, s := range []int{200, 201, 404, 409, 410, 429, 503} {
		if seen[s] == 0 {
			t.Errorf("no result with status %d", s)
		}
	}
}

// rawState lists every key and value of f's state file as stored, bucket
// by bucket, in hex.
func rawState(t *testing.T, f *fsm.FSM) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.db")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteTo(out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sb strings.Builder
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&sb, "%s %x %x\n", name, k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}
