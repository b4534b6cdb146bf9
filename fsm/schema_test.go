package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/restarea/restarea"
	bolt "go.etcd.io/bbolt"
)

// recordGen fills every exported field of a record by reflection, so a
// field added to restarea.Entry that appendRecordJSON does not write makes
// TestRecordJSONMatchesMarshal fail.
type recordGen struct {
	t   testing.TB
	rng *rand.Rand
}

func (g *recordGen) str() string {
	switch g.rng.Intn(5) {
	case 0:
		return ""
	case 1:
		return []string{"<a href=\"x\">&amp;</a>", "\u2028\u2029", "\x00\x01\x08\x0c\x1f\x7f", "tab\tnl\ncr\r\\",
			"日本語 😀 é", "\xff\xfe", "\xed\xa0\x80", "\xf0\x9f\x98", "a\xc3"}[g.rng.Intn(9)]
	case 2:
		b := make([]byte, g.rng.Intn(40))
		g.rng.Read(b)
		return string(b)
	case 3:
		var sb strings.Builder
		runes := []rune("aZ9 \"\\<>&\x00\x1f\u2028\u2029é日😀\ufffd\n")
		for n := g.rng.Intn(300); n > 0; n-- {
			sb.WriteRune(runes[g.rng.Intn(len(runes))])
		}
		return sb.String()
	}
	return fmt.Sprintf("0192d6a4-7b8e-7c3e-9f00-%012x", g.rng.Int63n(1<<40))
}

func (g *recordGen) time() time.Time {
	t := time.Unix(0, g.rng.Int63()-g.rng.Int63())
	switch g.rng.Intn(6) {
	case 0:
		return t
	case 1: // offsets near and past what RFC 3339 can express
		return t.In(time.FixedZone("z", (g.rng.Intn(60)-30)*3600+g.rng.Intn(3)*1800))
	case 2: // years outside [0,9999]
		return time.Date([]int{-1, 0, 9999, 10000, 123456}[g.rng.Intn(5)], 1, 2, 3, 4, 5, g.rng.Intn(1e9), time.UTC)
	case 3:
		return time.Unix(g.rng.Int63n(1<<34), 0).UTC() // whole seconds: no fraction
	}
	return t.UTC()
}

func (g *recordGen) fill(v reflect.Value) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(g.time()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(g.str())
	case reflect.Bool:
		v.SetBool(g.rng.Intn(2) == 0)
	case reflect.Uint64:
		v.SetUint(g.rng.Uint64() >> g.rng.Intn(64))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				g.fill(v.Field(i))
			}
		}
	default:
		g.t.Fatalf("recordGen cannot fill a %s (%s): teach it, and appendRecordJSON", v.Kind(), v.Type())
	}
}

// The hand-written record encoder writes the bytes json.Marshal writes.
func TestRecordJSONMatchesMarshal(t *testing.T) {
	g := &recordGen{t: t, rng: rand.New(rand.NewSource(1))}
	fails := 0
	for range 5000 {
		var r record
		g.fill(reflect.ValueOf(&r).Elem())
		checkRecordJSON(t, &r)
		if _, ok := appendRecordJSON(nil, &r); !ok {
			fails++
		}
	}
	if fails == 0 {
		t.Fatal("no record exercised the fallback to json.Marshal")
	}
}

func checkRecordJSON(t *testing.T, r *record) {
	t.Helper()
	want, err := json.Marshal(r)
	got, ok := appendRecordJSON(nil, r)
	switch {
	case ok != (err == nil):
		t.Fatalf("appendRecordJSON ok=%v, json.Marshal err=%v, for %#v", ok, err, r)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("appendRecordJSON differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
}

func FuzzRecordJSON(f *testing.F) {
	f.Add("q", "body <b>&</b>\n", int64(1735689600123456789), uint64(7), true, 0)
	f.Add("\xff\u2028", "", int64(-1), uint64(0), false, 3600)
	f.Fuzz(func(t *testing.T, a, b string, nanos int64, seq uint64, vis bool, offset int) {
		r := &record{Entry: restarea.Entry{
			ID: a, RequestID: b, Type: a + b, ParentID: b, Title: a, Body: b + a,
			Actor:          restarea.Actor{Name: a, Model: b, Trigger: a},
			SubmissionMode: b, Channel: restarea.Channel(a), URL: b, BookmarkURL: a,
			CreatedAt: time.Unix(0, nanos).In(time.FixedZone("", offset%(48*3600))),
			Visible:   vis, ByOperator: !vis,
		}, AttemptID: a, Seq: seq}
		checkRecordJSON(t, r)
	})
}

// getSettings answers what decoding the stored bytes every time answers,
// also while the settings change and for bytes that do not decode.
func TestGetSettingsMemo(t *testing.T) {
	db, err := bolt.Open(t.TempDir()+"/s.db", 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	values := [][]byte{
		nil,
		[]byte(`{"writes_disabled":true,"per_source_limit":{"count":5,"window_seconds":60},"global_limit":{"count":9,"window_seconds":3600}}`),
		[]byte(`{"writes_disabled":false,"per_source_limit":{"count":5,"window_seconds":60},"global_limit":{"count":9,"window_seconds":3600},"operator_set_global":true}`),
		[]byte(`{"per_source_limit":{"count":"x"},"global_limit":{"count":1,"window_seconds":2}}`),
		[]byte(`not json`),
		[]byte(`{}`),
	}
	rng := rand.New(rand.NewSource(1))
	for range 200 {
		v := values[rng.Intn(len(values))]
		err := db.Update(func(tx *bolt.Tx) error {
			m, err := tx.CreateBucketIfNotExists(bMeta)
			if err != nil {
				return err
			}
			if v == nil {
				err = m.Delete(kSettings)
			} else {
				err = m.Put(kSettings, v)
			}
			if err != nil {
				return err
			}
			want := storedSettings{Settings: restarea.DefaultSettings()}
			if v != nil {
				_ = json.Unmarshal(v, &want)
			}
			for range 2 {
				if got, err := getSettings(tx); err != nil || got != want {
					t.Fatalf("getSettings = %+v, want %+v (stored %s)", got, want, v)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkApplyNoSync applies batches of 64 new questions with the fsync
// turned off, so that it measures the CPU of applying (decoding, deciding,
// encoding, bbolt) rather than the disk, which dominates, and varies
// wildly on a shared machine, in BenchmarkApplyBatch. fresh-sources is
// BenchmarkApplyBatch's load (a new source per post); clients is 64
// clients posting in turn under the default per-source limit.
func BenchmarkApplyNoSync(b *testing.B) {
	for _, tc := range []struct {
		name      string
		sources   int // 0: a new one per post
		perSource restarea.Limit
		step      time.Duration
	}{
		{"fresh-sources", 0, restarea.Limit{Count: 1_000_000, WindowSeconds: 1}, time.Millisecond},
		{"clients", 64, restarea.Limit{Count: 30, WindowSeconds: 60}, 2 * time.Second},
	} {
		for _, version := range []int{1, 3} {
			benchmarkApplyNoSync(b, tc.name, tc.sources, tc.perSource, tc.step, version)
		}
	}
}

// benchmarkApplyNoSync is one case of BenchmarkApplyNoSync at a cluster
// version: 1 stores bare values, 3 sealed ones (sum.go).
func benchmarkApplyNoSync(b *testing.B, name string, sources int, perSource restarea.Limit, step time.Duration, version int) {
	b.Run(fmt.Sprintf("%s/cluster-version=%d", name, version), func(b *testing.B) {
		f, err := Open(b.TempDir()+"/state.db", Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		f.db.NoSync = true
		now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		index := uint64(0)
		encode := func(c *Command) *raft.Log {
			data, err := c.Encode()
			if err != nil {
				b.Fatal(err)
			}
			index++
			return &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
		}
		f.ApplyBatch([]*raft.Log{encode(&Command{Op: OpSettings, Time: now, Settings: &SettingsCommand{Patch: restarea.SettingsPatch{
			PerSourceLimit: &perSource, GlobalLimit: &restarea.Limit{Count: 1_000_000, WindowSeconds: 1},
		}}})})
		for v := 2; v <= version; v++ {
			f.ApplyBatch([]*raft.Log{encode(&Command{Op: OpClusterVersion, Time: now, ClusterVersion: v})})
		}
		if f.ClusterVersion() != version {
			b.Fatalf("cluster version %d, want %d", f.ClusterVersion(), version)
		}
		body := strings.Repeat("A body of a few hundred bytes, as agents write them. ", 6)
		logs := make([]*raft.Log, 64)
		posts := 0
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			now += int64(step)
			for j := range logs {
				rid := uuid.NewString()
				source := rid
				if sources > 0 {
					source = fmt.Sprintf("203.0.113.%d", j%sources)
				}
				logs[j] = encode(&Command{Op: OpPost, Time: now, Post: &PostCommand{
					Request: restarea.PostRequest{RequestID: rid, Type: restarea.TypeQuestion, Title: "a question of typical length",
						Body: body, Actor: restarea.Actor{Name: "agent", Model: "m1"}, SubmissionMode: restarea.ModeAutonomous},
					Source: source, Channel: restarea.ChannelHTTP, AttemptID: uuid.NewString(), NewID: uuid.NewString(),
				}})
			}
			b.StartTimer()
			for _, r := range f.ApplyBatch(logs) {
				if r.(*Result).Err == nil {
					posts++
				}
			}
		}
		b.StopTimer()
		if posts != 64*b.N {
			b.Fatalf("%d of %d posts stored", posts, 64*b.N)
		}
		b.ReportMetric(float64(posts)/b.Elapsed().Seconds(), "posts/s")
	})
}

func BenchmarkRecordJSON(b *testing.B) {
	r := &record{Entry: restarea.Entry{
		ID: "0192d6a4-7b8e-7c3e-9f00-0a1b2c3d4e5f", RequestID: "7d444840-9dc0-11d1-b245-5ffdce74fad2",
		Type: restarea.TypeQuestion, Title: "a question of typical length",
		Body:  strings.Repeat("A body of a few hundred bytes, as agents write them. ", 6),
		Actor: restarea.Actor{Name: "agent", Model: "m1"}, SubmissionMode: restarea.ModeAutonomous,
		Channel: restarea.ChannelHTTP, CreatedAt: time.Unix(0, 1735689600123456789).UTC(), Visible: true,
	}, AttemptID: "0192d6a4-7b8e-7c3e-9f00-000000000001", Seq: 123456}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendRecordJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			appendRecordJSON(make([]byte, 0, recordJSONSize(r)), r)
		}
	})
}
