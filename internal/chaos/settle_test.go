package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A node that stopped answering is asked a bounded number of times, not
// every entry with every retry: a run whose nodes all died is checked in
// seconds instead of hours.
func TestReadAllGivesUpOnASilentNode(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, `{"error":{"code":"unavailable","message":"down"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	const n = 500
	acked := make(map[string]ackedEntry, n)
	for i := range n {
		acked[fmt.Sprintf("rid-%d", i)] = ackedEntry{id: fmt.Sprintf("id-%d", i), typ: "question"}
	}
	missing := readAll(context.Background(), srv.Client(), []string{srv.URL}, acked)
	if len(missing) != n {
		t.Fatalf("%d of %d reads reported missing", len(missing), n)
	}
	if max := int64((nodeDownAfter + readParallel) * readAttempts); hits.Load() > max {
		t.Fatalf("the silent node was asked %d times; at most %d expected", hits.Load(), max)
	}
}
