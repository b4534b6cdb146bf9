package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

func TestReads(t *testing.T) {
	upper := strings.ToUpper(entryID)
	cursor := "c2"
	question := restarea.Entry{ID: entryID, Type: restarea.TypeQuestion, Title: "t", Body: "b", Visible: true}
	reply := restarea.Entry{ID: entryID, Type: restarea.TypeReply, ParentID: parentID, Body: "b", Visible: true}
	tests := []struct {
		name    string
		path    string
		stub    any          // the service's canned answer
		want    testkit.Call // the service call expected
		rawPart string       // a piece of the raw answer
	}{
		{
			name: "threads, defaults", path: "/api/v1/threads", stub: restarea.ThreadPage{},
			want:    testkit.Call{Method: "ListThreads"},
			rawPart: `{"data":{"threads":[],"next_cursor":null}}`,
		},
		{
			name: "threads, every option and an unknown one", path: "/api/v1/threads?cursor=c1&limit=10&consistency=strong&utm_source=x",
			stub:    restarea.ThreadPage{Threads: []restarea.Entry{{ID: entryID, Type: restarea.TypeQuestion}}, NextCursor: &cursor},
			want:    testkit.Call{Method: "ListThreads", List: restarea.ListOptions{Cursor: "c1", Limit: 10, Consistency: restarea.ConsistencyStrong}},
			rawPart: `"next_cursor":"c2"`,
		},
		{
			name: "threads, empty limit is the default", path: "/api/v1/threads?limit=&consistency=local", stub: restarea.ThreadPage{},
			want:    testkit.Call{Method: "ListThreads"},
			rawPart: `"threads":[]`,
		},
		{
			name: "thread, id lowercased", path: "/api/v1/threads/" + upper, stub: question,
			want:    testkit.Call{Method: "GetThread", ID: entryID},
			rawPart: `"id":"` + entryID + `"`,
		},
		{
			name: "thread, strong", path: "/api/v1/threads/" + entryID + "?consistency=strong", stub: question,
			want:    testkit.Call{Method: "GetThread", ID: entryID, Read: restarea.ReadOptions{Consistency: restarea.ConsistencyStrong}},
			rawPart: `"type":"question"`,
		},
		{
			name: "replies, empty", path: "/api/v1/threads/" + upper + "/replies?limit=200", stub: restarea.ReplyPage{},
			want:    testkit.Call{Method: "ListReplies", ID: entryID, List: restarea.ListOptions{Limit: 200}},
			rawPart: `{"data":{"replies":[],"next_cursor":null}}`,
		},
		{
			name: "replies, a page", path: "/api/v1/threads/" + entryID + "/replies?cursor=abc&limit=1",
			stub:    restarea.ReplyPage{Replies: []restarea.Entry{{ID: parentID, Type: restarea.TypeReply}}, NextCursor: &cursor},
			want:    testkit.Call{Method: "ListReplies", ID: entryID, List: restarea.ListOptions{Cursor: "abc", Limit: 1}},
			rawPart: `"replies":[{"id":"` + parentID + `"`,
		},
		{
			// Newest first is the pages' feeds' order: no parameter asks for it.
			name: "replies, oldest first whatever the query", path: "/api/v1/threads/" + entryID + "/replies?newest_first=true&NewestFirst=1&order=desc",
			stub:    restarea.ReplyPage{},
			want:    testkit.Call{Method: "ListReplies", ID: entryID},
			rawPart: `"replies":[]`,
		},
		{
			name: "reply", path: "/api/v1/replies/" + upper + "?consistency=default", stub: reply,
			want:    testkit.Call{Method: "GetReply", ID: entryID},
			rawPart: `"type":"reply"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			if tt.stub != nil {
				f.Stub(tt.want.Method, tt.stub)
			}
			srv := serve(t, f, Config{})
			r := do(t, srv, http.MethodGet, tt.path, "")
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			if !strings.Contains(r.raw, tt.rawPart) {
				t.Fatalf("answer %s lacks %s", r.raw, tt.rawPart)
			}
			if n, c := f.Last(); n != 1 || c != tt.want {
				t.Fatalf("service call %+v (of %d), want %+v", c, n, tt.want)
			}
		})
	}
}

func TestReadsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		msgPart string
	}{
		{"limit not a number", "/api/v1/threads?limit=ten", "limit"},
		{"limit zero", "/api/v1/threads?limit=0", "limit"},
		{"limit negative", "/api/v1/threads?limit=-1", "limit"},
		{"limit too big", "/api/v1/threads?limit=201", "limit"},
		{"limit fractional", "/api/v1/threads?limit=1.5", "limit"},
		{"limit huge", "/api/v1/threads?limit=99999999999999999999", "limit"},
		{"replies limit", "/api/v1/threads/" + entryID + "/replies?limit=500", "limit"},
		{"consistency unknown", "/api/v1/threads?consistency=eventual", "consistency"},
		{"reply consistency unknown", "/api/v1/replies/" + entryID + "?consistency=STRONG", "consistency"},
		{"malformed query", "/api/v1/threads?limit=%zz", "query"},
		{"thread id not a UUID", "/api/v1/threads/123", "id"},
		{"thread id with bad hex", "/api/v1/threads/" + strings.Replace(entryID, "5", "g", 1), "id"},
		{"replies id not a UUID", "/api/v1/threads/nope/replies", "id"},
		{"reply id not a UUID", "/api/v1/replies/" + entryID + "0", "id"},
		{"escaped slash in id", "/api/v1/replies/a%2Fb", "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			srv := serve(t, f, Config{})
			r := do(t, srv, http.MethodGet, tt.path, "")
			wantError(t, r, http.StatusBadRequest, restarea.CodeInvalidRequest, tt.msgPart)
			if n, _ := f.Last(); n != 0 {
				t.Fatal("a bad request reached the service")
			}
		})
	}
}

func TestReadsServiceErrors(t *testing.T) {
	notFound := restarea.Errorf(restarea.CodeNotFound, "no such thread")
	bad := restarea.Errorf(restarea.CodeInvalidRequest, "cursor is not valid")
	tests := []struct {
		name   string
		path   string
		err    error
		status int
		code   restarea.Code
	}{
		{"thread not found", "/api/v1/threads/" + entryID, notFound, 404, restarea.CodeNotFound},
		{"replies of a hidden thread", "/api/v1/threads/" + entryID + "/replies", notFound, 404, restarea.CodeNotFound},
		{"reply not found", "/api/v1/replies/" + entryID, notFound, 404, restarea.CodeNotFound},
		{"bad cursor", "/api/v1/threads?cursor=zzz", bad, 400, restarea.CodeInvalidRequest},
		{"strong read without leader", "/api/v1/threads?consistency=strong", restarea.Errorf(restarea.CodeUnavailable, "no leader"), 503, restarea.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, testkit.NewFakeService().FailWith(tt.err), Config{})
			r := do(t, srv, http.MethodGet, tt.path, "")
			wantError(t, r, tt.status, tt.code, restarea.ErrorMessage(tt.err))
		})
	}
}
