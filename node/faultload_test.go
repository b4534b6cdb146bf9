package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/node"
)

// faultLoad posts questions over HTTP to every node of a cluster while a
// test breaks one of them, and keeps what a careful client keeps: the
// entries acknowledged (201/200) and the requests whose outcome it did not
// learn (503, a timeout), which it retries with the same request_id once
// the fault is healed. Any other answer fails the test.
type faultLoad struct {
	t      *testing.T
	client *http.Client

	mu       sync.Mutex
	acked    map[string]string // request_id → entry id
	unknown  map[string]restarea.PostRequest
	status   map[string]map[int]int // node id → status → count
	messages map[string]string      // node id → last 503 message
	lat      map[string][]time.Duration
	phase    string
}

func newFaultLoad(t *testing.T) *faultLoad {
	return &faultLoad{
		t: t, client: &http.Client{Timeout: 15 * time.Second},
		acked: map[string]string{}, unknown: map[string]restarea.PostRequest{},
		status: map[string]map[int]int{}, messages: map[string]string{}, lat: map[string][]time.Duration{},
	}
}

// post sends req to n and records the outcome; it returns the status.
func (l *faultLoad) post(n *node.Node, req restarea.PostRequest) int {
	b, _ := json.Marshal(req)
	start := time.Now()
	resp, err := l.client.Post(n.URL()+"/api/v1/entries", "application/json", bytes.NewReader(b))
	status := 0
	var body struct {
		Data *struct {
			ID string `json:"id"`
		} `json:"data"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err == nil {
		status = resp.StatusCode
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
	}
	d := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.status[n.ID()] == nil {
		l.status[n.ID()] = map[int]int{}
	}
	l.status[n.ID()][status]++
	switch {
	case (status == http.StatusCreated || status == http.StatusOK) && body.Data != nil:
		id := body.Data.ID
		if prev, ok := l.acked[req.RequestID]; ok && prev != id {
			l.t.Errorf("request %s acknowledged as %s, then as %s", req.RequestID, prev, id)
		}
		l.acked[req.RequestID] = id
		delete(l.unknown, req.RequestID)
		l.lat[l.phase] = append(l.lat[l.phase], d)
	case status == 0 || status == http.StatusServiceUnavailable:
		if _, ok := l.acked[req.RequestID]; !ok {
			l.unknown[req.RequestID] = req
		}
		if body.Error != nil {
			if body.Error.Code != string(restarea.CodeUnavailable) {
				l.t.Errorf("node %s: 503 with code %q: %s", n.ID(), body.Error.Code, body.Error.Message)
			}
			l.messages[n.ID()] = body.Error.Message
		}
	default:
		msg := ""
		if body.Error != nil {
			msg = body.Error.Code + ": " + body.Error.Message
		}
		l.t.Errorf("node %s answered a post %d (%s, err %v)", n.ID(), status, msg, err)
	}
	return status
}

// run posts from workers goroutines to random nodes until ctx ends.
func (l *faultLoad) run(ctx context.Context, nodes []*node.Node, workers int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l.post(nodes[rand.IntN(len(nodes))], testkit.Question("Is it stored once?"))
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return &wg
}

func (l *faultLoad) setPhase(p string) {
	l.mu.Lock()
	l.phase = p
	l.mu.Unlock()
}

// counts returns how often n answered status so far.
func (l *faultLoad) counts(n *node.Node, status int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status[n.ID()][status]
}

func (l *faultLoad) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// resolve retries every request whose outcome is unknown, with the same
// request_id and content, through healthy nodes, until each is
// acknowledged.
func (l *faultLoad) resolve(via []*node.Node) {
	l.t.Helper()
	testkit.Eventually(l.t, 30*time.Second, "every post to resolve after the fault was healed", func() error {
		l.mu.Lock()
		var pending []restarea.PostRequest
		for _, r := range l.unknown {
			pending = append(pending, r)
		}
		l.mu.Unlock()
		if len(pending) == 0 {
			return nil
		}
		for i, r := range pending {
			l.post(via[i%len(via)], r)
		}
		return fmt.Errorf("%d posts still unresolved", len(pending))
	})
}

// verify waits until every node holds every acknowledged entry, exactly
// once, and nothing else.
func (l *faultLoad) verify(nodes []*node.Node) {
	l.t.Helper()
	want := map[string]bool{}
	l.mu.Lock()
	for _, id := range l.acked {
		want[id] = true
	}
	l.mu.Unlock()
	for _, n := range nodes {
		testkit.Eventually(l.t, 30*time.Second, "node "+n.ID()+" to hold every acknowledged entry once", func() error {
			got, err := listAll(n)
			switch {
			case err != nil:
				return err
			case len(got) != len(want):
				return fmt.Errorf("%d entries, want %d", len(got), len(want))
			}
			for id, c := range got {
				if c != 1 || !want[id] {
					return fmt.Errorf("entry %s stored %d times (acknowledged: %v)", id, c, want[id])
				}
			}
			return nil
		})
	}
}

// listAll counts each question id in n's own state.
func listAll(n *node.Node) (map[string]int, error) {
	got := map[string]int{}
	cursor := ""
	for {
		p, err := n.ListThreads(context.Background(), restarea.ListOptions{Cursor: cursor, Limit: 200})
		if err != nil {
			return nil, err
		}
		for _, e := range p.Threads {
			got[e.ID]++
		}
		if p.NextCursor == nil {
			return got, nil
		}
		cursor = *p.NextCursor
	}
}

// report logs what each node answered and the acknowledged posts' latency
// per phase (median, 99th percentile, max).
func (l *faultLoad) report() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, s := range l.status {
		l.t.Logf("node %s answered %v", id, s)
	}
	var phases []string
	for p := range l.lat {
		phases = append(phases, p)
	}
	sort.Strings(phases)
	for _, p := range phases {
		d := l.lat[p]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		l.t.Logf("phase %s: %d acknowledged, latency p50 %v p99 %v max %v", p, len(d),
			d[len(d)/2].Round(time.Millisecond), d[len(d)*99/100].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
}

// latency returns the median and 99th percentile of acknowledged posts in
// phase.
func (l *faultLoad) latency(phase string) (p50, p99 time.Duration, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := append([]time.Duration(nil), l.lat[phase]...)
	if len(d) == 0 {
		return 0, 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100], len(d)
}
