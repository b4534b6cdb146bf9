package restarea_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
)

func TestEntrySetURLs(t *testing.T) {
	const base = "https://rest.area"
	const id = "11111111-2222-3333-4444-555555555555"
	tests := []struct {
		name         string
		e            restarea.Entry
		wantURL      string
		wantBookmark string
	}{
		{"question", restarea.Entry{ID: id, Type: restarea.TypeQuestion},
			base + "/threads/" + id, ""},
		{"question clears a stale bookmark", restarea.Entry{ID: id, Type: restarea.TypeQuestion, BookmarkURL: "x"},
			base + "/threads/" + id, ""},
		{"reply", restarea.Entry{ID: id, Type: restarea.TypeReply, ParentID: testParentID},
			base + "/threads/" + testParentID + "#reply-" + id, base + "/replies/" + id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			e.SetURLs(base)
			if e.URL != tt.wantURL || e.BookmarkURL != tt.wantBookmark {
				t.Fatalf("SetURLs: url %q bookmark %q, want %q %q", e.URL, e.BookmarkURL, tt.wantURL, tt.wantBookmark)
			}
			// Setting again (e.g. on a replay) gives the same URLs.
			e.SetURLs(base)
			if e.URL != tt.wantURL || e.BookmarkURL != tt.wantBookmark {
				t.Fatalf("second SetURLs: url %q bookmark %q", e.URL, e.BookmarkURL)
			}
		})
	}
}

func TestChannelValid(t *testing.T) {
	tests := []struct {
		c    restarea.Channel
		want bool
	}{
		{restarea.ChannelHTTP, true},
		{restarea.ChannelMCP, true},
		{"", false},
		{"HTTP", false},
		{"grpc", false},
	}
	for _, tt := range tests {
		if got := tt.c.Valid(); got != tt.want {
			t.Errorf("Channel(%q).Valid() = %v, want %v", tt.c, got, tt.want)
		}
	}
}

func TestEntryJSON(t *testing.T) {
	tests := []struct {
		name   string
		e      restarea.Entry
		has    []string
		hasNot []string
	}{
		{
			name: "public reply",
			e: restarea.Entry{ID: "r", Type: restarea.TypeReply, ParentID: "q", Body: "b",
				Actor: restarea.Actor{Name: "n"}, SubmissionMode: restarea.ModeManual, Channel: restarea.ChannelMCP,
				CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Visible: true,
				URL: "u", BookmarkURL: "bu"},
			has: []string{`"id":"r"`, `"type":"reply"`, `"parent_id":"q"`, `"body":"b"`, `"actor":{"name":"n"}`,
				`"submission_mode":"manual"`, `"channel":"mcp"`, `"created_at":"2025-01-02T03:04:05Z"`,
				`"visible":true`, `"by_operator":false`, `"url":"u"`, `"bookmark_url":"bu"`},
			hasNot: []string{`request_id`, `"title"`, `"model"`, `"trigger"`},
		},
		{
			name:   "question with request_id",
			e:      restarea.Entry{ID: "q", RequestID: "rid", Type: restarea.TypeQuestion, Title: "t", Actor: restarea.Actor{Name: "n", Model: "m", Trigger: "x"}},
			has:    []string{`"request_id":"rid"`, `"title":"t"`, `"actor":{"name":"n","model":"m","trigger":"x"}`, `"visible":false`},
			hasNot: []string{`parent_id`, `bookmark_url`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.e)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.has {
				if !strings.Contains(string(b), s) {
					t.Errorf("%s lacks %s", b, s)
				}
			}
			for _, s := range tt.hasNot {
				if strings.Contains(string(b), s) {
					t.Errorf("%s has %s", b, s)
				}
			}
		})
	}
}
