package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
)

// Bounds of one logical post: the initial fan-out plus the retries of
// docs/contract.md §7 until a 201 or 200 confirms it.
const (
	maxRetries     = 40
	maxPostTime    = 30 * time.Second
	callTimeout    = 6 * time.Second
	maxRetryWait   = time.Second
	slotsPerWorker = 4
	// maxPostsPerWorker bounds a worker's loop even when --ops and
	// --duration are both generous.
	maxPostsPerWorker = 1_000_000
)

// workload drives the workers. Every call it makes is recorded in hist.
type workload struct {
	cfg  Config
	urls []string
	hc   *http.Client
	mcp  *mcpPool
	hist *History

	// calls counts calls started; no call starts past cfg.MaxOps.
	calls atomic.Int64

	mu        sync.Mutex
	questions []string // confirmed question ids, parents for replies
	// earlier are confirmed posts (a bounded sample), replayed once
	// replayEarlier is set: the last round of a rolling upgrade replays
	// request_ids the old binary stored.
	earlier       []restarea.PostRequest
	replayEarlier atomic.Bool
	// earlierReplays counts the replays of earlier posts made.
	earlierReplays atomic.Int64
}

// maxEarlier bounds the sample of confirmed posts kept for replays.
const maxEarlier = 4096

// take reserves one call of the budget.
func (w *workload) take() bool {
	return w.cfg.MaxOps <= 0 || w.calls.Add(1) <= int64(w.cfg.MaxOps)
}

// run starts the workers and returns when they have all stopped: at the
// end of ctx or of the call budget.
func (w *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range w.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(w.cfg.Seed*7919 + int64(i)))
			for n := 0; n < maxPostsPerWorker && ctx.Err() == nil; n++ {
				if !w.onePost(ctx, rng, i) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// newRequest returns new content: a question, or a reply to a confirmed
// question.
func (w *workload) newRequest(rng *rand.Rand, worker int) restarea.PostRequest {
	req := restarea.PostRequest{
		RequestID: uuid.NewString(), Type: restarea.TypeQuestion,
		Title:          fmt.Sprintf("chaos question w%d %d", worker, rng.Intn(1_000_000)),
		Body:           fmt.Sprintf("chaos body %d from worker %d", rng.Int63(), worker),
		Actor:          restarea.Actor{Name: fmt.Sprintf("chaos-worker-%d", worker), Model: "restarea-chaos", Trigger: "chaos run"},
		SubmissionMode: restarea.ModeAutonomous,
	}
	w.mu.Lock()
	if len(w.questions) > 0 && rng.Intn(10) < 3 {
		req.Type, req.Title = restarea.TypeReply, ""
		req.ParentID = w.questions[rng.Intn(len(w.questions))]
	}
	w.mu.Unlock()
	return req
}

// call is one call to make.
type call struct {
	worker, slot int
	node         int
	channel      string
	timeout      time.Duration
}

// pick chooses a channel and a timeout: one call in ten is abandoned by
// the client after a few milliseconds, so that its outcome is unknown.
func (w *workload) pick(rng *rand.Rand, worker, slot, node int) call {
	c := call{worker: worker, slot: slot, node: node, channel: ChannelREST, timeout: callTimeout}
	if rng.Intn(2) == 0 {
		c.channel = ChannelMCP
	}
	if rng.Intn(10) == 0 {
		c.timeout = time.Duration(1+rng.Intn(40)) * time.Millisecond
	}
	return c
}

// post makes one post call and records it.
func (w *workload) post(c call, req restarea.PostRequest, hash string, probe bool) answer {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := w.hist.Now()
	var a answer
	if c.channel == ChannelMCP {
		a = w.mcp.post(ctx, c.node, req)
	} else {
		a = restPost(ctx, w.hc, w.urls[c.node], req)
	}
	w.hist.Add(Op{
		Client: c.worker*slotsPerWorker + c.slot, Kind: OpPost, RequestID: req.RequestID, ContentHash: hash, Type: req.Type, Probe: probe,
		Node: c.node, Channel: c.channel, CallNs: start, ReturnNs: w.hist.Now(),
		Status: a.status, Outcome: a.outcome, EntryID: a.entryID, Error: a.err,
	})
	return a
}

// read makes one read call of entry id (of request rid) and records it.
func (w *workload) read(c call, rid, typ, id string, strong bool) answer {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := w.hist.Now()
	var a answer
	if c.channel == ChannelMCP {
		a = w.mcp.read(ctx, c.node, typ, id, strong)
	} else {
		a = restRead(ctx, w.hc, w.urls[c.node], typ, id, strong)
	}
	if a.outcome == OutcomeFound && a.entryID != id {
		a.outcome, a.err = OutcomeUnexpected, "read of "+id+" returned entry "+a.entryID
	}
	w.hist.Add(Op{
		Client: c.worker*slotsPerWorker + c.slot, Kind: OpRead, RequestID: rid, Type: typ, Node: c.node, Channel: c.channel,
		Strong: strong, CallNs: start, ReturnNs: w.hist.Now(), Status: a.status, Outcome: a.outcome, EntryID: id, Error: a.err,
	})
	return a
}

// fanOut sends req to k distinct nodes at nearly the same instant and
// returns their answers.
func (w *workload) fanOut(rng *rand.Rand, worker, k int, req restarea.PostRequest, hash string, probe bool) []answer {
	nodes := rng.Perm(len(w.urls))[:k]
	calls := make([]call, 0, k)
	for slot, n := range nodes {
		if !w.take() {
			break
		}
		calls = append(calls, w.pick(rng, worker, slot, n))
	}
	answers := make([]answer, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = w.post(c, req, hash, probe) }()
	}
	wg.Wait()
	return answers
}

// fanout returns how many copies of a new post to send at once: two or
// more whenever there are two nodes.
func (w *workload) fanout(rng *rand.Rand) int {
	max := min(w.cfg.Fanout, len(w.urls))
	if max <= 1 {
		return 1
	}
	return 2 + rng.Intn(max-1)
}

// onePost posts new content like a careful client (docs/contract.md §7),
// then replays it, probes it with changed content and reads it back. It
// returns false once the call budget is spent.
func (w *workload) onePost(ctx context.Context, rng *rand.Rand, worker int) bool {
	if w.replayEarlier.Load() && rng.Intn(2) == 0 {
		w.replayOne(rng, worker)
	}
	req := w.newRequest(rng, worker)
	hash := ContentHash(req.Content())
	answers := w.fanOut(rng, worker, w.fanout(rng), req, hash, false)
	if len(answers) == 0 {
		return false
	}
	id := confirmed(answers)
	deadline := time.Now().Add(maxPostTime)
	for try := 0; id == "" && try < maxRetries && time.Now().Before(deadline); try++ {
		wait, retry := retryDelay(rng, answers[len(answers)-1])
		if !retry {
			return true
		}
		if !sleep(ctx, wait) || !w.take() {
			return false // the run is over or the budget spent
		}
		answers = []answer{w.post(w.pick(rng, worker, 0, rng.Intn(len(w.urls))), req, hash, false)}
		id = confirmed(answers)
	}
	if id == "" {
		return true // unconfirmed: the checker treats it as possibly applied
	}
	w.mu.Lock()
	if req.Type == restarea.TypeQuestion {
		w.questions = append(w.questions, id)
	}
	if !w.replayEarlier.Load() {
		if len(w.earlier) < maxEarlier {
			w.earlier = append(w.earlier, req)
		} else {
			w.earlier[rng.Intn(maxEarlier)] = req
		}
	}
	w.mu.Unlock()
	if rng.Intn(5) == 0 {
		w.fanOut(rng, worker, 1+rng.Intn(min(2, len(w.urls))), req, hash, false)
	}
	if rng.Intn(7) == 0 {
		changed := req
		changed.Body += " (changed on purpose)"
		w.fanOut(rng, worker, 1+rng.Intn(min(2, len(w.urls))), changed, ContentHash(changed.Content()), true)
	}
	if rng.Intn(2) == 0 && w.take() {
		c := w.pick(rng, worker, 0, rng.Intn(len(w.urls)))
		w.read(c, req.RequestID, req.Type, id, rng.Intn(10) < 3)
	}
	return true
}

// replayOne replays a post confirmed earlier in the run to one or two
// nodes, with its content (a 200 with its entry expected) or, one time in
// seven, changed (a 409 expected); the checker holds the answers to the
// entry the request_id was first acknowledged with.
func (w *workload) replayOne(rng *rand.Rand, worker int) {
	w.mu.Lock()
	if len(w.earlier) == 0 {
		w.mu.Unlock()
		return
	}
	req := w.earlier[rng.Intn(len(w.earlier))]
	w.mu.Unlock()
	probe := rng.Intn(7) == 0
	if probe {
		req.Body += " (changed on purpose)"
	}
	w.earlierReplays.Add(1)
	w.fanOut(rng, worker, 1+rng.Intn(min(2, len(w.urls))), req, ContentHash(req.Content()), probe)
}

// confirmed returns the entry id of the first 201 or 200 among answers.
func confirmed(answers []answer) string {
	for _, a := range answers {
		if a.outcome == OutcomeCreated || a.outcome == OutcomeReplayed {
			return a.entryID
		}
	}
	return ""
}

// retryDelay says whether to retry after a, and after how long: 429 and
// 503 after their Retry-After (capped, so a run stays short), lost
// answers after a short backoff; a 409 or an unexpected answer ends the
// post (docs/contract.md §7 step 4: there is nothing to restore, the content
// is the original).
func retryDelay(rng *rand.Rand, a answer) (time.Duration, bool) {
	jitter := time.Duration(rng.Intn(100)) * time.Millisecond
	switch a.outcome {
	case OutcomeRateLimited, OutcomeUnavailable:
		return min(a.retryAfter, maxRetryWait) + jitter, true
	case OutcomeTimeout, OutcomeFailed:
		return 50*time.Millisecond + jitter, true
	}
	return 0, false
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
