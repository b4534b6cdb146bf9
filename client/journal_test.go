package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// checkJournal is an http.RoundTripper that, before a request's first
// byte leaves the process, checks that the journal already holds the post
// as pending with its normalised content.
type checkJournal struct {
	t    *testing.T
	j    *client.Journal
	want restarea.PostRequest
	hits int
}

func (c *checkJournal) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		c.hits++
		left, err := c.j.Pending()
		if err != nil || len(left) != 1 || left[0].Request != c.want {
			c.t.Errorf("before sending, the journal holds %+v (%v); want exactly %+v", left, err, c.want)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestJournalWrittenBeforeSending(t *testing.T) {
	n := testnode.Start(t)
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := client.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	req := testkit.Question("Cafe\u0301\r\nnormalised")
	req.Body = "line one\r\nline two\rline three"
	req.RequestID = "ABCDEF01-2345-4678-9ABC-DEF012345678"
	want, err := req.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	if want.Title != "Café\nnormalised" || want.Body != "line one\nline two\nline three" {
		t.Fatalf("normalisation changed: %+v", want)
	}
	rt := &checkJournal{t: t, j: j, want: want}
	c, err := client.New(client.Options{Servers: []string{n.URL()}, Journal: j, HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Post(context.Background(), req)
	if err != nil || res.Outcome != client.Confirmed || res.RequestID != want.RequestID {
		t.Fatalf("post: %+v, %v", res, err)
	}
	if rt.hits != 1 {
		t.Fatalf("%d posts sent, want 1", rt.hits)
	}
	// The file is what a later process reads: one pending line with the
	// normalised request, then the outcome.
	recs, err := j.Records()
	if err != nil || len(recs) != 2 || recs[0].Kind != client.KindPending || *recs[0].Request != want ||
		recs[1].Kind != client.KindOutcome || recs[1].Result.Outcome != client.Confirmed {
		t.Fatalf("records %+v, %v", recs, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("journal file mode: %v, %v", st, err)
	}
}

func TestJournalPending(t *testing.T) {
	q := func(title string) restarea.PostRequest {
		r, err := testkit.Question(title).Normalize()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, c := q("a"), q("b"), q("c")
	finish := func(r restarea.PostRequest, o client.Outcome) client.Result {
		return client.Result{RequestID: r.RequestID, Outcome: o, Reason: "because " + string(o)}
	}
	type step struct {
		begin  *restarea.PostRequest
		finish *client.Result
	}
	res := func(r client.Result) step { return step{finish: &r} }
	cases := []struct {
		name  string
		steps []step
		want  []string // request_ids still pending, in order
	}{
		{name: "empty"},
		{name: "begun, never finished", steps: []step{{begin: &a}}, want: []string{a.RequestID}},
		{name: "confirmed", steps: []step{{begin: &a}, res(finish(a, client.Confirmed))}},
		{name: "unconfirmed stays", steps: []step{{begin: &a}, res(finish(a, client.Unconfirmed))}, want: []string{a.RequestID}},
		{name: "unconfirmed, resumed, confirmed", steps: []step{
			{begin: &a}, res(finish(a, client.Unconfirmed)), {begin: &a}, res(finish(a, client.Confirmed))}},
		{name: "order of first record", steps: []step{
			{begin: &b}, {begin: &a}, {begin: &c}, res(finish(a, client.Rejected)), {begin: &b}},
			want: []string{b.RequestID, c.RequestID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, err := client.OpenJournal(filepath.Join(t.TempDir(), "j.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.steps {
				if s.begin != nil {
					err = j.Begin(*s.begin, []string{"http://127.0.0.1:1"})
				} else {
					err = j.Finish(*s.finish)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got := pending(t, j)
			if len(got) != len(tc.want) {
				t.Fatalf("pending %+v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].Request.RequestID != tc.want[i] || len(got[i].Servers) != 1 {
					t.Fatalf("pending[%d] = %+v, want %s", i, got[i], tc.want[i])
				}
			}
			// Compaction keeps exactly the pending posts.
			if _, err := j.Compact(); err != nil {
				t.Fatal(err)
			}
			if again := pending(t, j); len(again) != len(got) {
				t.Fatalf("after compaction %d pending, want %d", len(again), len(got))
			}
		})
	}
}

// A crash in the middle of an append leaves a torn last line: it is
// skipped, and the next record still lands on a line of its own.
func TestJournalTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := client.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := testkit.Question("a").Normalize()
	if err := j.Begin(a, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"v":1,"kind":"pending","request_id":"torn`)
	f.Close()
	b, _ := testkit.Question("b").Normalize()
	if err := j.Begin(b, nil); err != nil {
		t.Fatal(err)
	}
	got := pending(t, j)
	if len(got) != 2 || got[0].Request.RequestID != a.RequestID || got[1].Request.RequestID != b.RequestID {
		t.Fatalf("pending %+v, want a and b", got)
	}
}

// Two Journal values on one file (as two processes would have) appending
// at once never interleave their records: the file lock serialises them.
func TestJournalConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	var journals [2]*client.Journal
	for i := range journals {
		j, err := client.OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		journals[i] = j
	}
	const each = 40
	var wg sync.WaitGroup
	for i := range 2 * each {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := testkit.Question(fmt.Sprintf("concurrent %d", i)).Normalize()
			r.Body = fmt.Sprintf("%0500d", i) // long enough to tear if unlocked
			if err := journals[i%2].Begin(r, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, line := range splitLines(data) {
		var rec client.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("line %d is not a record: %v", lines, err)
		}
		lines++
	}
	if lines != 2*each {
		t.Fatalf("%d records, want %d", lines, 2*each)
	}
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

func TestDefaultJournalPath(t *testing.T) {
	cases := []struct {
		name, xdg, home, want string
	}{
		{name: "XDG_STATE_HOME", xdg: "/state", home: "/home/u", want: "/state/restarea/journal.jsonl"},
		{name: "relative XDG is ignored", xdg: "rel", home: "/home/u", want: "/home/u/.local/state/restarea/journal.jsonl"},
		{name: "home", home: "/home/u", want: "/home/u/.local/state/restarea/journal.jsonl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			got, err := client.DefaultJournalPath()
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
