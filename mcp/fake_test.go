package mcp

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
)

// fakeService is an in-memory restarea.Service with the decision rules of
// docs/contract.md §2 that the adapter's tests need, plus a hook that scripts
// errors, panics and delays.
type fakeService struct {
	mu        sync.Mutex
	byRequest map[string]*restarea.Entry
	questions []*restarea.Entry            // in creation order
	replies   map[string][]*restarea.Entry // by parent id, in creation order
	metas     []restarea.PostMeta

	// hook, when set, runs before every call and may return an error
	// (answered instead), panic or block.
	hook func(ctx context.Context, op string) error
}

func newFake() *fakeService {
	return &fakeService{byRequest: map[string]*restarea.Entry{}, replies: map[string][]*restarea.Entry{}}
}

func (f *fakeService) run(ctx context.Context, op string) error {
	f.mu.Lock()
	h := f.hook
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	return h(ctx, op)
}

func (f *fakeService) setHook(h func(ctx context.Context, op string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

func (f *fakeService) lastMeta() restarea.PostMeta {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.metas) == 0 {
		return restarea.PostMeta{}
	}
	return f.metas[len(f.metas)-1]
}

func (f *fakeService) Post(ctx context.Context, req restarea.PostRequest, meta restarea.PostMeta) (restarea.PostResult, error) {
	req, err := req.Normalize()
	if err != nil {
		return restarea.PostResult{}, err
	}
	if err := f.run(ctx, "post"); err != nil {
		return restarea.PostResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.metas = append(f.metas, meta)
	if e, ok := f.byRequest[req.RequestID]; ok {
		if !restarea.SameContent(e.Content(), req.Content()) {
			return restarea.PostResult{}, restarea.Errorf(restarea.CodeConflict, "request_id was already used with different content")
		}
		return restarea.PostResult{Entry: *e, Replayed: true}, nil
	}
	if req.Type == restarea.TypeReply && f.question(req.ParentID) == nil {
		return restarea.PostResult{}, restarea.Errorf(restarea.CodeParentNotFound, "parent %s not found", req.ParentID)
	}
	e := &restarea.Entry{
		ID: uuid.NewString(), RequestID: req.RequestID, Type: req.Type, ParentID: req.ParentID,
		Title: req.Title, Body: req.Body, Actor: req.Actor, SubmissionMode: req.SubmissionMode,
		Channel: meta.Channel, CreatedAt: time.Date(2025, 1, 1, 0, 0, len(f.byRequest), 0, time.UTC), Visible: true,
	}
	e.SetURLs("https://rest.example")
	f.byRequest[req.RequestID] = e
	if e.Type == restarea.TypeQuestion {
		f.questions = append(f.questions, e)
	} else {
		f.replies[e.ParentID] = append(f.replies[e.ParentID], e)
	}
	return restarea.PostResult{Entry: *e}, nil
}

func (f *fakeService) question(id string) *restarea.Entry {
	for _, q := range f.questions {
		if q.ID == id {
			return q
		}
	}
	return nil
}

// page returns entries[cursor:cursor+limit] and the next cursor.
func page(entries []restarea.Entry, opts restarea.ListOptions) ([]restarea.Entry, *string, error) {
	start := 0
	if opts.Cursor != "" {
		n, err := strconv.Atoi(opts.Cursor)
		if err != nil || n < 0 || n > len(entries) {
			return nil, nil, restarea.Errorf(restarea.CodeInvalidRequest, "cursor is not valid")
		}
		start = n
	}
	limit := opts.Limit
	if limit == 0 {
		limit = restarea.DefaultPageLimit
	}
	end := min(start+limit, len(entries))
	var next *string
	if end < len(entries) {
		s := strconv.Itoa(end)
		next = &s
	}
	return entries[start:end], next, nil
}

func public(e *restarea.Entry) restarea.Entry {
	c := *e
	c.RequestID = ""
	return c
}

func (f *fakeService) ListThreads(ctx context.Context, opts restarea.ListOptions) (restarea.ThreadPage, error) {
	if err := f.run(ctx, "list_threads"); err != nil {
		return restarea.ThreadPage{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []restarea.Entry
	for i := len(f.questions) - 1; i >= 0; i-- {
		all = append(all, public(f.questions[i]))
	}
	es, next, err := page(all, opts)
	return restarea.ThreadPage{Threads: es, NextCursor: next}, err
}

func (f *fakeService) GetThread(ctx context.Context, id string, _ restarea.ReadOptions) (restarea.Entry, error) {
	if err := f.run(ctx, "get_thread"); err != nil {
		return restarea.Entry{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.question(id); q != nil {
		return public(q), nil
	}
	return restarea.Entry{}, restarea.Errorf(restarea.CodeNotFound, "thread %s not found", id)
}

func (f *fakeService) ListReplies(ctx context.Context, threadID string, opts restarea.ListOptions) (restarea.ReplyPage, error) {
	if err := f.run(ctx, "list_replies"); err != nil {
		return restarea.ReplyPage{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.question(threadID) == nil {
		return restarea.ReplyPage{}, restarea.Errorf(restarea.CodeNotFound, "thread %s not found", threadID)
	}
	var all []restarea.Entry
	for _, r := range f.replies[threadID] {
		all = append(all, public(r))
	}
	es, next, err := page(all, opts)
	return restarea.ReplyPage{Replies: es, NextCursor: next}, err
}

func (f *fakeService) GetReply(ctx context.Context, id string, _ restarea.ReadOptions) (restarea.Entry, error) {
	if err := f.run(ctx, "get_reply"); err != nil {
		return restarea.Entry{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rs := range f.replies {
		for _, r := range rs {
			if r.ID == id {
				return public(r), nil
			}
		}
	}
	return restarea.Entry{}, restarea.Errorf(restarea.CodeNotFound, "reply %s not found", id)
}
