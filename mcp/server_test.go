package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// The protocol versions a node must serve: the SDK's default (newest) and
// a client pinned to 2025-11-25.
var versions = []string{"", "2025-11-25"}

func TestListTools(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			cs := connect(t, serve(t, Config{Service: testkit.NewFakeService()}), v, nil)
			t.Logf("negotiated protocol %s", cs.InitializeResult().ProtocolVersion)
			res, err := cs.ListTools(testCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*sdk.Tool{}
			for _, tool := range res.Tools {
				got[tool.Name] = tool
			}
			tests := []struct {
				name                string
				readOnly, idempot   bool
				destructive, openW  *bool
				teachesRetry        bool
				requiredInputFields []string
			}{
				{ToolNewRequestID, true, false, nil, ptr(false), false, nil},
				{ToolPostEntry, false, true, ptr(false), ptr(true), true, []string{"request_id", "type", "body", "actor", "submission_mode"}},
				{ToolListThreads, true, true, nil, ptr(true), false, nil},
				{ToolGetThread, true, true, nil, ptr(true), false, []string{"id"}},
				{ToolListReplies, true, true, nil, ptr(true), false, []string{"thread_id"}},
				{ToolGetReply, true, true, nil, ptr(true), false, []string{"id"}},
				{ToolSearch, true, true, nil, ptr(true), false, nil},
			}
			if len(got) != len(tests) {
				t.Errorf("got %d tools, want %d", len(got), len(tests))
			}
			for _, tt := range tests {
				tool := got[tt.name]
				if tool == nil {
					t.Errorf("tool %s missing", tt.name)
					continue
				}
				in, _ := tool.InputSchema.(map[string]any)
				out, _ := tool.OutputSchema.(map[string]any)
				if in["type"] != "object" || out["type"] != "object" {
					t.Errorf("%s: input schema %v, output schema %v: want objects", tt.name, in, out)
				}
				if props, _ := out["properties"].(map[string]any); props["http_status"] == nil || props["error"] == nil || props["retry_after_seconds"] == nil {
					t.Errorf("%s: output schema lacks the result shape: %v", tt.name, out)
				}
				if fmt.Sprint(in["required"]) != fmt.Sprint(anySlice(tt.requiredInputFields)) {
					t.Errorf("%s: required inputs %v, want %v", tt.name, in["required"], tt.requiredInputFields)
				}
				a := tool.Annotations
				if a == nil {
					t.Errorf("%s: no annotations", tt.name)
					continue
				}
				if a.ReadOnlyHint != tt.readOnly || a.IdempotentHint != tt.idempot ||
					fmt.Sprint(deref(a.DestructiveHint)) != fmt.Sprint(deref(tt.destructive)) ||
					fmt.Sprint(deref(a.OpenWorldHint)) != fmt.Sprint(deref(tt.openW)) {
					t.Errorf("%s: annotations %+v", tt.name, a)
				}
				if tt.teachesRetry {
					for _, phrase := range []string{"same request_id", "same content", "replayed=true", "409", "retry_after_seconds", "unconfirmed", GuideURI} {
						if !strings.Contains(tool.Description, phrase) {
							t.Errorf("%s: description does not mention %q", tt.name, phrase)
						}
					}
				}
			}
		})
	}
}

func anySlice(s []string) any {
	if s == nil {
		return nil
	}
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

func TestPostAndReplay(t *testing.T) {
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			fake := testkit.NewFakeService()
			cs := connect(t, serve(t, Config{Service: fake}), v, nil)

			idRes := call(t, cs, ToolNewRequestID, map[string]any{})
			rid, _ := idRes.Data["request_id"].(string)
			if idRes.HTTPStatus != 200 || uuid.Validate(rid) != nil {
				t.Fatalf("new_request_id: %+v", idRes)
			}
			if u := uuid.MustParse(rid); u.Version() != 4 {
				t.Errorf("request_id %s is version %d, want 4", rid, u.Version())
			}

			first := call(t, cs, ToolPostEntry, question(strings.ToUpper(rid), "hello\r\nworld"))
			if first.HTTPStatus != 201 || first.IsError || first.Data["replayed"] != false {
				t.Fatalf("first post: %s", first.Text)
			}
			if first.Data["channel"] != "mcp" || first.Data["body"] != "hello\nworld" || first.Data["request_id"] != rid {
				t.Errorf("first post data: %v", first.Data)
			}
			again := call(t, cs, ToolPostEntry, question(rid, "hello\nworld"))
			if again.HTTPStatus != 200 || again.IsError || again.Data["replayed"] != true || again.Data["id"] != first.Data["id"] {
				t.Errorf("replay: %s", again.Text)
			}
			conflict := call(t, cs, ToolPostEntry, question(rid, "other"))
			if conflict.HTTPStatus != 409 || !conflict.IsError || conflict.Error == nil || conflict.Error.Code != restarea.CodeConflict || conflict.Data != nil {
				t.Errorf("conflict: %s", conflict.Text)
			}
			if m := lastMeta(fake); m.Channel != restarea.ChannelMCP || m.Source != "127.0.0.1" {
				t.Errorf("post meta %+v, want channel mcp from 127.0.0.1", m)
			}

			qid := first.Data["id"].(string)
			got := call(t, cs, ToolGetThread, map[string]any{"id": strings.ToUpper(qid), "consistency": "strong"})
			if got.HTTPStatus != 200 || got.Data["id"] != qid || got.Data["request_id"] != nil {
				t.Errorf("get_thread: %s", got.Text)
			}
			r := call(t, cs, ToolPostEntry, reply(uuid.NewString(), qid, "a reply"))
			if r.HTTPStatus != 201 || r.Data["bookmark_url"] == nil {
				t.Fatalf("reply: %s", r.Text)
			}
			gr := call(t, cs, ToolGetReply, map[string]any{"id": r.Data["id"]})
			if gr.HTTPStatus != 200 || gr.Data["parent_id"] != qid {
				t.Errorf("get_reply: %s", gr.Text)
			}
			missing := call(t, cs, ToolGetThread, map[string]any{"id": uuid.NewString()})
			if missing.HTTPStatus != 404 || missing.Error.Code != restarea.CodeNotFound {
				t.Errorf("missing thread: %s", missing.Text)
			}
			orphan := call(t, cs, ToolPostEntry, reply(uuid.NewString(), uuid.NewString(), "orphan"))
			if orphan.HTTPStatus != 404 || orphan.Error.Code != restarea.CodeParentNotFound {
				t.Errorf("orphan reply: %s", orphan.Text)
			}
		})
	}
}

// TestServiceErrors checks that each service error reaches the agent with
// the status, code and retry delay the REST API would give it.
func TestServiceErrors(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   restarea.Code
		retry  int
	}{
		{"conflict", restarea.Errorf(restarea.CodeConflict, "different content"), 409, restarea.CodeConflict, 0},
		{"rate limited", restarea.Errorf(restarea.CodeRateLimited, "slow down").WithRetryAfter(2500 * time.Millisecond), 429, restarea.CodeRateLimited, 3},
		{"global limit", restarea.Errorf(restarea.CodeGlobalRateLimited, "site busy").WithRetryAfter(time.Minute), 429, restarea.CodeGlobalRateLimited, 60},
		{"writes disabled", restarea.Errorf(restarea.CodeWritesDisabled, "writes are disabled"), 503, restarea.CodeWritesDisabled, 1},
		{"unavailable", restarea.Errorf(restarea.CodeUnavailable, "no leader").WithRetryAfter(time.Second), 503, restarea.CodeUnavailable, 1},
		{"parent not found", restarea.Errorf(restarea.CodeParentNotFound, "no parent"), 404, restarea.CodeParentNotFound, 0},
		{"invalid parent", restarea.Errorf(restarea.CodeInvalidParent, "parent is a reply"), 422, restarea.CodeInvalidParent, 0},
		{"deleted", restarea.Errorf(restarea.CodeDeleted, "deleted by an operator"), 410, restarea.CodeDeleted, 0},
		{"plain error is internal", errors.New("disk on fire"), 500, restarea.CodeInternal, 0},
		{"bare deadline is unavailable", context.DeadlineExceeded, 503, restarea.CodeUnavailable, 1},
	}
	fake := testkit.NewFakeService()
	cs := connect(t, serve(t, Config{Service: fake}), "", nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake.SetHook(func(context.Context, testkit.Call) error { return tt.err })
			for _, tool := range []struct {
				name string
				args any
			}{
				{ToolPostEntry, question(uuid.NewString(), "body")},
				{ToolListThreads, nil},
				{ToolGetReply, map[string]any{"id": uuid.NewString()}},
			} {
				got := call(t, cs, tool.name, tool.args)
				if got.HTTPStatus != tt.status || got.Error == nil || got.Error.Code != tt.code ||
					got.RetryAfterSeconds != tt.retry || !got.IsError || got.Data != nil {
					t.Errorf("%s: got %s, want status %d code %s retry %d", tool.name, got.Text, tt.status, tt.code, tt.retry)
				}
				if tt.code == restarea.CodeInternal && strings.Contains(got.Text, "disk") {
					t.Errorf("%s: internal error leaked: %s", tool.name, got.Text)
				}
			}
		})
	}
}

func TestPaging(t *testing.T) {
	fake := testkit.NewFakeService()
	cs := connect(t, serve(t, Config{Service: fake}), "2025-11-25", nil)
	const n = 7
	var qid string
	for i := range n {
		r := call(t, cs, ToolPostEntry, question(uuid.NewString(), fmt.Sprint("q", i)))
		qid = r.Data["id"].(string)
	}
	for i := range n {
		call(t, cs, ToolPostEntry, reply(uuid.NewString(), qid, fmt.Sprint("r", i)))
	}
	tests := []struct {
		tool, key string
		args      map[string]any
		want      []string // bodies in page order
	}{
		{ToolListThreads, "threads", map[string]any{}, []string{"q6", "q5", "q4", "q3", "q2", "q1", "q0"}},
		{ToolListReplies, "replies", map[string]any{"thread_id": qid}, []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			var bodies []string
			args := tt.args
			args["limit"] = 3
			for pages := 0; ; pages++ {
				if pages > n {
					t.Fatal("paging does not end")
				}
				r := call(t, cs, tt.tool, args)
				if r.HTTPStatus != 200 {
					t.Fatalf("page %d: %s", pages, r.Text)
				}
				for _, e := range r.Data[tt.key].([]any) {
					bodies = append(bodies, e.(map[string]any)["body"].(string))
				}
				next, ok := r.Data["next_cursor"]
				if !ok {
					t.Fatalf("next_cursor missing: %s", r.Text)
				}
				if next == nil {
					break
				}
				args["cursor"] = next
			}
			if fmt.Sprint(bodies) != fmt.Sprint(tt.want) {
				t.Errorf("pages gave %v, want %v", bodies, tt.want)
			}
		})
	}
	// Replies are listed oldest first: newest first is the pages' feeds'
	// order, which no tool argument reaches.
	for _, c := range fake.Calls() {
		if c.List.NewestFirst {
			t.Errorf("%s was asked for newest first", c.Method)
		}
	}
	empty := call(t, connect(t, serve(t, Config{Service: testkit.NewFakeService()}), "", nil), ToolListThreads, nil)
	if fmt.Sprint(empty.Data["threads"]) != "[]" || empty.Data["next_cursor"] != nil {
		t.Errorf("empty list: %s", empty.Text)
	}
}

// TestBadInput checks that wrong arguments get a 400 naming the problem
// (the same validation REST uses) and never reach the service.
func TestBadInput(t *testing.T) {
	valid := func(edit func(m map[string]any)) map[string]any {
		m := question(uuid.NewString(), "body")
		edit(m)
		return m
	}
	tests := []struct {
		name, tool string
		args       any
		wantMsg    string
	}{
		{"no arguments", ToolPostEntry, nil, "request_id is required"},
		{"wrong type", ToolPostEntry, valid(func(m map[string]any) { m["body"] = 42 }), "body must be a string"},
		{"actor not an object", ToolPostEntry, valid(func(m map[string]any) { m["actor"] = "me" }), "actor must be an object"},
		{"missing body", ToolPostEntry, valid(func(m map[string]any) { delete(m, "body") }), "body is required"},
		{"missing title", ToolPostEntry, valid(func(m map[string]any) { delete(m, "title") }), "title is required"},
		{"extra field", ToolPostEntry, valid(func(m map[string]any) { m["channel"] = "http" }), `unknown field "channel"`},
		{"invalid uuid", ToolPostEntry, valid(func(m map[string]any) { m["request_id"] = "not-a-uuid" }), "request_id must be a UUID"},
		{"bad enum", ToolPostEntry, valid(func(m map[string]any) { m["submission_mode"] = "yolo" }), "submission_mode must be"},
		{"long body", ToolPostEntry, valid(func(m map[string]any) { m["body"] = strings.Repeat("あ", restarea.MaxBody+1) }), "body must be at most"},
		{"question with parent", ToolPostEntry, valid(func(m map[string]any) { m["parent_id"] = uuid.NewString() }), "parent_id must be absent"},
		{"reply bad parent", ToolPostEntry, reply(uuid.NewString(), "x", "b"), "parent_id must be a UUID"},
		{"get without id", ToolGetThread, map[string]any{}, "id is required"},
		{"get bad id", ToolGetReply, map[string]any{"id": "../etc"}, "id must be a UUID"},
		{"get extra", ToolGetThread, map[string]any{"id": uuid.NewString(), "x": 1}, `unknown field "x"`},
		{"bad consistency", ToolGetThread, map[string]any{"id": uuid.NewString(), "consistency": "eventual"}, "consistency must be"},
		{"limit too big", ToolListThreads, map[string]any{"limit": 201}, "limit must be an integer between 1 and 200"},
		{"limit zero", ToolListThreads, map[string]any{"limit": 0}, "limit must be an integer between"},
		{"limit not integer", ToolListThreads, map[string]any{"limit": 1.5}, "limit must be an integer between"},
		{"limit string", ToolListReplies, map[string]any{"thread_id": uuid.NewString(), "limit": "3"}, "limit must be an integer between"},
		{"cursor not a string", ToolListThreads, map[string]any{"cursor": 3}, "cursor must be a string"},
		{"replies without thread", ToolListReplies, map[string]any{"cursor": "0"}, "thread_id is required"},
		{"new id with arguments", ToolNewRequestID, map[string]any{"n": 2}, `unknown field "n"`},
	}
	fake := testkit.NewFakeService()
	fake.SetHook(func(_ context.Context, c testkit.Call) error {
		return fmt.Errorf("service reached by bad input (%s)", c.Method)
	})
	cs := connect(t, serve(t, Config{Service: fake}), "", nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := call(t, cs, tt.tool, tt.args)
			if got.HTTPStatus != 400 || got.Error == nil || got.Error.Code != restarea.CodeInvalidRequest || !strings.Contains(got.Error.Message, tt.wantMsg) {
				t.Errorf("got %s, want 400 invalid_request containing %q", got.Text, tt.wantMsg)
			}
		})
	}
	if _, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("unknown tool: want a protocol error")
	}
}

func TestPanicAndTimeout(t *testing.T) {
	fake := testkit.NewFakeService()
	cs := connect(t, serve(t, Config{Service: fake, CallTimeout: 200 * time.Millisecond}), "", nil)

	fake.SetHook(func(context.Context, testkit.Call) error { panic("boom") })
	got := call(t, cs, ToolPostEntry, question(uuid.NewString(), "b"))
	if got.HTTPStatus != 500 || got.Error.Code != restarea.CodeInternal || strings.Contains(got.Text, "boom") {
		t.Errorf("panic: %s", got.Text)
	}

	// A service that ignores its context still cannot hold the answer.
	release := make(chan struct{})
	defer close(release)
	fake.SetHook(func(context.Context, testkit.Call) error { <-release; return nil })
	got = call(t, cs, ToolPostEntry, question(uuid.NewString(), "b"))
	if got.HTTPStatus != 503 || got.Error.Code != restarea.CodeUnavailable || got.RetryAfterSeconds != 1 ||
		!strings.Contains(got.Error.Message, "same request_id") {
		t.Errorf("timeout: %s", got.Text)
	}

	// The server still answers afterwards.
	fake.SetHook(nil)
	if got := call(t, cs, ToolListThreads, nil); got.HTTPStatus != 200 {
		t.Errorf("after timeout: %s", got.Text)
	}
}
