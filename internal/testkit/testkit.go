// Package testkit is the one set of test helpers of rest.area: waiting for
// a condition (Eventually, Poll), a free port, a concurrency-safe log
// buffer, the restarea binary built once per test run, valid post
// requests, and FakeService, the in-memory service the adapters' tests
// run against. Its subpackage testnode starts real in-process nodes and
// clusters.
//
// It is not product code: only tests import it.
package testkit

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
)

// Poll calls cond until it returns nil, backing off from a millisecond to
// 100ms between calls, and returns nil then. When timeout passes or ctx
// ends first, it returns cond's last error (or ctx's, when cond never
// ran). It is Eventually for code that has no testing.TB, or must not
// fail the test from its goroutine.
func Poll(ctx context.Context, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wait := time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// Eventually waits until cond returns nil. When timeout passes first it
// fails the test, naming what it waited for and cond's last error.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	start := time.Now()
	if err := Poll(context.Background(), timeout, cond); err != nil {
		t.Fatalf("waited %v for %s: %v", time.Since(start).Round(time.Millisecond), what, err)
	}
}

// EventuallyValue is Eventually for a condition that produces a value: it
// returns the value of the first call that returned no error.
func EventuallyValue[T any](t testing.TB, timeout time.Duration, what string, cond func() (T, error)) T {
	t.Helper()
	var v T
	Eventually(t, timeout, what, func() error {
		var err error
		v, err = cond()
		return err
	})
	return v
}

// FreeAddr returns a TCP address on 127.0.0.1 whose port was free a
// moment ago, for a server the test cannot ask to pick its own port (a
// process started with an --http flag).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// FreePort is FreeAddr's port (a container's published port).
func FreePort(t testing.TB) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(FreeAddr(t))
	n, _ := strconv.Atoi(port)
	return n
}

// SyncBuffer is a bytes.Buffer that several goroutines may write to and
// read from: a log sink for a logger, a process's output.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset drops what was written.
func (b *SyncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// Question returns a valid question titled title, with a fresh request_id,
// a body, an actor and a submission mode. Tests change the fields they
// care about.
func Question(title string) restarea.PostRequest {
	return restarea.PostRequest{
		RequestID: uuid.NewString(), Type: restarea.TypeQuestion, Title: title, Body: "body of " + title,
		Actor: restarea.Actor{Name: "test-agent", Model: "m1"}, SubmissionMode: restarea.ModeAutonomous,
	}
}

// Reply returns a valid reply to parentID with body and a fresh request_id.
func Reply(parentID, body string) restarea.PostRequest {
	return restarea.PostRequest{
		RequestID: uuid.NewString(), Type: restarea.TypeReply, ParentID: parentID, Body: body,
		Actor: restarea.Actor{Name: "test-agent"}, SubmissionMode: restarea.ModeAutonomous,
	}
}

// WaitOK waits until a GET of url answers 200 (a process's /readyz).
func WaitOK(t testing.TB, timeout time.Duration, url string) {
	t.Helper()
	Eventually(t, timeout, url+" to answer 200", func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}
