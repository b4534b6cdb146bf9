package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// writer posts questions without pause, like a client behind the client
// Service: each attempt goes to the next node in turn, and a failed
// attempt (no answer, 503, 429) is retried with the same request_id on the
// next node until it is acknowledged. Every fourth post replays an earlier
// acknowledged request_id, which must answer 200 replayed with the same
// entry id. It measures, per phase, the longest time between two
// acknowledged posts: how long the client saw writes unavailable.
type writer struct {
	urls  []string // base URL per node
	names []string // the pods' names, for the log
	http  *http.Client
	title string

	mu       sync.Mutex
	acked    map[string]string // request_id → entry id
	sent     map[string]bool   // every request_id sent at least once
	bodies   []map[string]any  // acknowledged fresh posts, for replays
	phase    string
	stats    map[string]*phaseStats
	phases   []string
	lastAck  time.Time
	problems []string

	stop chan struct{}
	done chan struct{}
}

type phaseStats struct {
	acks, replays, failedAttempts int
	maxGap                        time.Duration
	// maxGapWrite lists the attempts of the write that ended the longest
	// gap: where the time went.
	maxGapWrite []string
}

func newWriter(urls, names []string, title string) *writer {
	return &writer{
		urls: urls, names: names, title: title,
		http:  &http.Client{Timeout: 10 * time.Second},
		acked: map[string]string{}, sent: map[string]bool{}, stats: map[string]*phaseStats{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// setPhase starts measuring a new phase from now.
func (w *writer) setPhase(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase, w.lastAck = name, time.Now()
	w.stats[name] = &phaseStats{}
	w.phases = append(w.phases, name)
}

func (w *writer) run(ctx context.Context) {
	defer close(w.done)
	next := 0
	for op := 0; ; op++ {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		w.mu.Lock()
		var body map[string]any
		replay := op%4 == 3 && len(w.bodies) > 0
		if replay {
			body = w.bodies[rand.IntN(len(w.bodies))]
		} else {
			body = question(fmt.Sprintf("%s: question %d", w.title, op))
		}
		w.mu.Unlock()
		id, attempts, ok := w.post(ctx, body, replay, &next)
		if !ok {
			continue
		}
		rid := body["request_id"].(string)
		now := time.Now()
		w.mu.Lock()
		st := w.stats[w.phase]
		if gap := now.Sub(w.lastAck); gap > st.maxGap {
			st.maxGap, st.maxGapWrite = gap, attempts
		}
		w.lastAck = now
		st.acks++
		if replay {
			st.replays++
			if w.acked[rid] != id {
				w.problems = append(w.problems, fmt.Sprintf("replay of %s answered id %s, first acknowledged as %s", rid, id, w.acked[rid]))
			}
		} else {
			w.acked[rid] = id
			w.bodies = append(w.bodies, body)
		}
		w.mu.Unlock()
	}
}

// post sends body until it is acknowledged, the writer stops (false) or an
// answer breaks the contract (recorded, false). It also returns what each
// attempt met and how long it took.
func (w *writer) post(ctx context.Context, body map[string]any, replay bool, next *int) (string, []string, bool) {
	raw, _ := json.Marshal(body)
	unknown := false // an earlier attempt may have been applied
	var attempts []string
	for {
		select {
		case <-w.stop:
			return "", attempts, false
		case <-ctx.Done():
			return "", attempts, false
		default:
		}
		k := *next % len(w.urls)
		u := w.urls[k] + "/api/v1/entries"
		*next++
		w.mu.Lock()
		w.sent[body["request_id"].(string)] = true
		w.mu.Unlock()
		began := time.Now()
		status, id, replayed, err := w.once(ctx, u, raw)
		outcome := strconv.Itoa(status)
		if err != nil {
			outcome = err.Error()
			if i := strings.LastIndex(outcome, ": "); i >= 0 {
				outcome = outcome[i+2:]
			}
		}
		attempts = append(attempts, fmt.Sprintf("%s: %s in %d ms", w.names[k], outcome, time.Since(began).Milliseconds()))
		switch {
		case err == nil && status == http.StatusCreated && !replayed && !replay:
			return id, attempts, true
		case err == nil && status == http.StatusOK && replayed && (replay || unknown):
			return id, attempts, true
		case err != nil || status == http.StatusServiceUnavailable || status == http.StatusBadGateway ||
			status == http.StatusGatewayTimeout || status == http.StatusTooManyRequests:
			unknown = unknown || status != http.StatusTooManyRequests
			w.mu.Lock()
			w.stats[w.phase].failedAttempts++
			w.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		default:
			w.mu.Lock()
			w.problems = append(w.problems, fmt.Sprintf("post %s (replay %v, unknown %v) through %s: status %d replayed %v id %s err %v",
				body["request_id"], replay, unknown, u, status, replayed, id, err))
			w.mu.Unlock()
			return "", attempts, false
		}
	}
}

func (w *writer) once(ctx context.Context, url string, body []byte) (status int, id string, replayed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, "", false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", false, err
	}
	var ans struct {
		Data struct {
			ID       string `json:"id"`
			Replayed bool   `json:"replayed"`
		} `json:"data"`
	}
	if resp.StatusCode < 300 {
		if err := json.Unmarshal(b, &ans); err != nil {
			return resp.StatusCode, "", false, fmt.Errorf("answer %d: %v: %s", resp.StatusCode, err, b)
		}
	}
	return resp.StatusCode, ans.Data.ID, ans.Data.Replayed, nil
}

// waitAcks waits until n more posts are acknowledged in the current phase.
func (w *writer) waitAcks(ctx context.Context, n int, within time.Duration) error {
	w.mu.Lock()
	target := w.stats[w.phase].acks + n
	w.mu.Unlock()
	deadline := time.Now().Add(within)
	for {
		w.mu.Lock()
		got, probs := w.stats[w.phase].acks, len(w.problems)
		w.mu.Unlock()
		if got >= target {
			return nil
		}
		if probs > 0 {
			return fmt.Errorf("the writer hit a problem")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("only %d of %d acknowledged posts within %v", got-(target-n), n, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// halt stops the writer and waits for it.
func (w *writer) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// snapshot returns a copy of what was acknowledged.
func (w *writer) snapshot() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.acked))
	for k, v := range w.acked {
		out[k] = v
	}
	return out
}

// problemList returns the contract violations seen so far.
func (w *writer) problemList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.problems...)
}

// sentSnapshot returns a copy of the request_ids sent so far.
func (w *writer) sentSnapshot() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]bool, len(w.sent))
	for k := range w.sent {
		out[k] = true
	}
	return out
}

func question(title string) map[string]any {
	return map[string]any{
		"request_id":      newUUID(),
		"type":            "question",
		"title":           title,
		"body":            "Posted by the Kubernetes StatefulSet simulation to check replication across rescheduled pods.",
		"actor":           map[string]any{"name": "k8s-sim", "model": "go test"},
		"submission_mode": "autonomous",
	}
}
