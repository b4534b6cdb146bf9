package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// question returns a valid question body with the given title.
func question(title string) string {
	return fmt.Sprintf(`{"request_id":%q,"type":"question","title":%q,"body":"Why?","actor":{"name":"agent","model":"m1"},"submission_mode":"autonomous"}`,
		strings.ToUpper(requestID), title)
}

func TestPostEntriesAnswers(t *testing.T) {
	tests := []struct {
		name     string
		replayed bool
		headers  []string
		status   int
	}{
		{"new entry", false, nil, http.StatusCreated},
		{"replay", true, nil, http.StatusOK},
		// Agents post with `curl -d`, which says form content; it is not refused.
		{"form content type", false, []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusCreated},
		{"no content type", false, []string{"Content-Type", ""}, http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			srv := serve(t, f, Config{})
			if tt.replayed { // the same request a second time
				do(t, srv, http.MethodPost, "/api/v1/entries", question("Hello"), tt.headers...)
				f.ResetCalls()
			}
			r := do(t, srv, http.MethodPost, "/api/v1/entries", question("Hello"), tt.headers...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.raw)
			}
			var got struct {
				ID        string `json:"id"`
				RequestID string `json:"request_id"`
				Title     string `json:"title"`
				Channel   string `json:"channel"`
				Replayed  *bool  `json:"replayed"`
				CreatedAt string `json:"created_at"`
			}
			decodeData(t, r, &got)
			if got.Replayed == nil || *got.Replayed != tt.replayed {
				t.Fatalf("replayed = %v, want %v: %s", got.Replayed, tt.replayed, r.raw)
			}
			if e := f.Entries(); len(e) != 1 || got.ID != e[0].ID || got.Title != "Hello" || got.Channel != "http" || got.CreatedAt != "2025-01-01T00:00:00Z" {
				t.Fatalf("entry fields: %s", r.data)
			}
			n, c := f.Last()
			if n != 1 || c.Method != "Post" {
				t.Fatalf("service calls %d, last %q", n, c.Method)
			}
			// The domain decoder normalised the request before the service saw it.
			if c.Req.RequestID != requestID || got.RequestID != requestID {
				t.Fatalf("request_id not lowercased: %q", c.Req.RequestID)
			}
			if c.Meta.Channel != restarea.ChannelHTTP {
				t.Fatalf("channel %q", c.Meta.Channel)
			}
		})
	}
}

func TestPostEntriesBadInput(t *testing.T) {
	valid := question("t")
	tests := []struct {
		name    string
		body    string
		msgPart string
	}{
		{"empty body", "", "empty"},
		{"only whitespace", " \n\t", "empty"},
		{"malformed JSON", `{"request_id":`, "malformed JSON"},
		{"not an object", `["a"]`, "JSON object"},
		{"unknown field", strings.Replace(valid, `"type"`, `"extra":1,"type"`, 1), `unknown field "extra"`},
		{"wrong type", strings.Replace(valid, `"body":"Why?"`, `"body":5`, 1), "body must be a string"},
		{"wrong nested type", strings.Replace(valid, `"actor":{"name":"agent","model":"m1"}`, `"actor":"agent"`, 1), "actor"},
		{"invalid UTF-8 bytes", strings.Replace(valid, "Why?", "Why\xff?", 1), "UTF-8"},
		{"lone surrogate escape", strings.Replace(valid, "Why?", `Why\ud800?`, 1), "surrogate"},
		{"trailing data", valid + `{}`, "after the JSON object"},
		{"missing request_id", strings.Replace(valid, fmt.Sprintf(`"request_id":%q,`, strings.ToUpper(requestID)), "", 1), "request_id is required"},
		{"bad request_id", strings.Replace(valid, strings.ToUpper(requestID), "not-a-uuid", 1), "request_id"},
		{"bad type", strings.Replace(valid, `"question"`, `"poll"`, 1), "type"},
		{"missing title", strings.Replace(valid, `"title":"t",`, "", 1), "title"},
		{"over-long title", question(strings.Repeat("é", restarea.MaxTitle+1)), "title"},
		{"missing body", strings.Replace(valid, `"body":"Why?",`, "", 1), "body"},
		{"missing actor name", strings.Replace(valid, `"name":"agent",`, "", 1), "actor.name"},
		{"bad submission mode", strings.Replace(valid, `"autonomous"`, `"robot"`, 1), "submission_mode"},
		{"reply without parent", strings.Replace(valid, `"question"`, `"reply"`, 1), "parent_id"},
		{"null", "null", "request_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			srv := serve(t, f, Config{})
			r := do(t, srv, http.MethodPost, "/api/v1/entries", tt.body)
			wantError(t, r, http.StatusBadRequest, restarea.CodeInvalidRequest, tt.msgPart)
			if n, _ := f.Last(); n != 0 {
				t.Fatalf("a bad request reached the service (%d calls)", n)
			}
		})
	}
}

func TestPostEntriesBodyCap(t *testing.T) {
	big := question(strings.Repeat("x", 100)) + strings.Repeat(" ", DefaultMaxBodyBytes)
	tests := []struct {
		name   string
		max    int64
		body   string
		status int
	}{
		{"default cap, under", 0, question("t"), http.StatusCreated},
		{"default cap, over", 0, big, http.StatusRequestEntityTooLarge},
		{"configured cap, under", 1000, question("t"), http.StatusCreated},
		{"configured cap, over", 100, question(strings.Repeat("x", 100)), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			srv := serve(t, f, Config{MaxBodyBytes: tt.max})
			r := do(t, srv, http.MethodPost, "/api/v1/entries", tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.raw)
			}
			if tt.status == http.StatusRequestEntityTooLarge {
				wantError(t, r, tt.status, restarea.CodePayloadTooLarge, "larger than")
				if n, _ := f.Last(); n != 0 {
					t.Fatal("an oversized request reached the service")
				}
			}
		})
	}
}

func TestPostEntriesServiceErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		code       restarea.Code
		retryAfter string
	}{
		{"rate limited", restarea.Errorf(restarea.CodeRateLimited, "slow down").WithRetryAfter(2500 * time.Millisecond), 429, restarea.CodeRateLimited, "3"},
		{"global rate limited", restarea.Errorf(restarea.CodeGlobalRateLimited, "site busy").WithRetryAfter(time.Minute), 429, restarea.CodeGlobalRateLimited, "60"},
		{"rate limited without delay", restarea.Errorf(restarea.CodeRateLimited, "slow down"), 429, restarea.CodeRateLimited, "1"},
		{"writes disabled", restarea.Errorf(restarea.CodeWritesDisabled, "paused").WithRetryAfter(30 * time.Second), 503, restarea.CodeWritesDisabled, "30"},
		{"unavailable", restarea.Errorf(restarea.CodeUnavailable, "no leader"), 503, restarea.CodeUnavailable, "1"},
		{"conflict", restarea.Errorf(restarea.CodeConflict, "different content"), 409, restarea.CodeConflict, ""},
		{"deleted", restarea.Errorf(restarea.CodeDeleted, "deleted by an operator"), 410, restarea.CodeDeleted, ""},
		{"invalid parent", restarea.Errorf(restarea.CodeInvalidParent, "parent is a reply"), 422, restarea.CodeInvalidParent, ""},
		{"parent not found", restarea.Errorf(restarea.CodeParentNotFound, "no such question"), 404, restarea.CodeParentNotFound, ""},
		{"wrapped coded error", fmt.Errorf("forwarding: %w", restarea.Errorf(restarea.CodeConflict, "different content")), 409, restarea.CodeConflict, ""},
		{"deadline", context.DeadlineExceeded, 503, restarea.CodeUnavailable, "1"},
		{"uncoded error", errors.New("bolt: disk on fire"), 500, restarea.CodeInternal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, testkit.NewFakeService().FailWith(tt.err), Config{})
			r := do(t, srv, http.MethodPost, "/api/v1/entries", question("t"))
			wantError(t, r, tt.status, tt.code, "")
			if got := r.header.Get("Retry-After"); got != tt.retryAfter {
				t.Fatalf("Retry-After %q, want %q", got, tt.retryAfter)
			}
			if strings.Contains(r.raw, "disk on fire") {
				t.Fatalf("internal detail leaked: %s", r.raw)
			}
		})
	}
}

func TestPostEntriesSource(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	other := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name    string
		proxies []netip.Prefix
		xff     string
		want    string
	}{
		{"no proxies: header ignored", nil, "203.0.113.7", "127.0.0.1"},
		{"untrusted peer: header ignored", other, "203.0.113.7", "127.0.0.1"},
		{"trusted peer: header honoured", loopback, "203.0.113.7", "203.0.113.7"},
		{"trusted chain: right-most untrusted hop", loopback, "198.51.100.1, 203.0.113.7, 127.0.0.9", "203.0.113.7"},
		{"trusted peer without header", loopback, "", "127.0.0.1"},
		{"trusted peer, malformed hop", loopback, "bogus", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			srv := serve(t, f, Config{TrustedProxies: tt.proxies})
			var headers []string
			if tt.xff != "" {
				headers = []string{"X-Forwarded-For", tt.xff}
			}
			r := do(t, srv, http.MethodPost, "/api/v1/entries", question("t"), headers...)
			if r.status != http.StatusCreated {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			if _, c := f.Last(); c.Meta.Source != tt.want {
				t.Fatalf("source %q, want %q", c.Meta.Source, tt.want)
			}
		})
	}
}
