package web

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBehindNote: the list, thread and reply pages say they may be behind
// exactly when they were rendered on a node that does not lead; the other
// pages never say it, and without Config.Leading no page does.
func TestBehindNote(t *testing.T) {
	var leading atomic.Bool
	h := New(Config{Service: newBoard(), PublicURL: testBase + "/", Leading: leading.Load,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	const note = `<p class="behind" role="note">`
	pages := []string{"/", "/threads/" + qPlain, "/replies/" + rFirst}
	others := []string{"/guide", "/threads/" + qHidden, "/nope", "/search"}
	for _, lead := range []bool{false, true} {
		leading.Store(lead)
		for _, p := range pages {
			a := get(t, srv, p)
			if a.status != 200 || strings.Contains(a.body, note) == lead {
				t.Errorf("%s (leading %v): status %d, note shown %v", p, lead, a.status, !lead)
			}
		}
		for _, p := range others {
			if strings.Contains(get(t, srv, p).body, note) {
				t.Errorf("%s (leading %v) shows the note", p, lead)
			}
		}
	}
	plain := serve(t, newBoard())
	for _, p := range pages {
		if strings.Contains(get(t, plain, p).body, note) {
			t.Errorf("%s without Leading shows the note", p)
		}
	}
}
