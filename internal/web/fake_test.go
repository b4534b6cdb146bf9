package web

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// fakeService is a restarea.Service over canned entries with the public
// read rules of docs/contract.md §3: hidden questions and replies are
// not_found, and so is every reply of a hidden question.
type fakeService struct {
	mu        sync.Mutex
	questions []restarea.Entry // newest first, as ListThreads returns them
	replies   map[string][]restarea.Entry
	hidden    map[string]bool
	pageSize  int   // the most entries one page returns
	err       error // when set, every read fails with it
}

func newFakeService() *fakeService {
	return &fakeService{replies: map[string][]restarea.Entry{}, hidden: map[string]bool{}, pageSize: 200}
}

var fakeEpoch = time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)

// fakeID returns a distinct lowercase UUID for n.
func fakeID(prefix, n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", prefix, n)
}

func (f *fakeService) addQuestion(id, title, body string) restarea.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := restarea.Entry{
		ID: id, Type: restarea.TypeQuestion, Title: title, Body: body,
		Actor:          restarea.Actor{Name: "asker", Model: "model-q", Trigger: "a user asked"},
		SubmissionMode: restarea.ModeAutonomous, Channel: restarea.ChannelMCP,
		CreatedAt: fakeEpoch.Add(time.Duration(len(f.questions)) * time.Minute), Visible: true,
	}
	f.questions = append([]restarea.Entry{e}, f.questions...)
	return e
}

func (f *fakeService) addReply(parent, id, title, body string) restarea.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := restarea.Entry{
		ID: id, Type: restarea.TypeReply, ParentID: parent, Title: title, Body: body,
		Actor:          restarea.Actor{Name: "replier"},
		SubmissionMode: restarea.ModeManual, Channel: restarea.ChannelHTTP,
		CreatedAt: fakeEpoch.Add(time.Duration(len(f.replies[parent])) * time.Second), Visible: true,
	}
	f.replies[parent] = append(f.replies[parent], e)
	return e
}

func (f *fakeService) hide(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hidden[id] = true
}

func (f *fakeService) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func notFound() error { return restarea.Errorf(restarea.CodeNotFound, "not found") }

// page cuts list at the position encoded in cursor.
func page[T any](list []T, cursor string, limit, most int) ([]T, *string, error) {
	start := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(list) {
			return nil, nil, restarea.Errorf(restarea.CodeInvalidRequest, "cursor is not valid")
		}
		start = n
	}
	if limit <= 0 {
		limit = restarea.DefaultPageLimit
	}
	if limit > restarea.MaxPageLimit {
		return nil, nil, restarea.Errorf(restarea.CodeInvalidRequest, "limit is at most 200")
	}
	end := min(start+min(limit, most), len(list))
	var next *string
	if end < len(list) {
		s := strconv.Itoa(end)
		next = &s
	}
	return list[start:end], next, nil
}

func (f *fakeService) Post(context.Context, restarea.PostRequest, restarea.PostMeta) (restarea.PostResult, error) {
	return restarea.PostResult{}, restarea.Errorf(restarea.CodeWritesDisabled, "the fake takes no posts")
}

func (f *fakeService) ListThreads(_ context.Context, o restarea.ListOptions) (restarea.ThreadPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return restarea.ThreadPage{}, f.err
	}
	var public []restarea.Entry
	for _, q := range f.questions {
		if !f.hidden[q.ID] {
			public = append(public, q)
		}
	}
	list, next, err := page(public, o.Cursor, o.Limit, f.pageSize)
	return restarea.ThreadPage{Threads: list, NextCursor: next}, err
}

func (f *fakeService) question(id string) (restarea.Entry, bool) {
	for _, q := range f.questions {
		if q.ID == id && !f.hidden[id] {
			return q, true
		}
	}
	return restarea.Entry{}, false
}

func (f *fakeService) GetThread(_ context.Context, id string, _ restarea.ReadOptions) (restarea.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return restarea.Entry{}, f.err
	}
	if q, ok := f.question(id); ok {
		return q, nil
	}
	return restarea.Entry{}, notFound()
}

func (f *fakeService) ListReplies(_ context.Context, id string, o restarea.ListOptions) (restarea.ReplyPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return restarea.ReplyPage{}, f.err
	}
	if _, ok := f.question(id); !ok {
		return restarea.ReplyPage{}, notFound()
	}
	var public []restarea.Entry
	for _, r := range f.replies[id] {
		if !f.hidden[r.ID] {
			public = append(public, r)
		}
	}
	list, next, err := page(public, o.Cursor, o.Limit, f.pageSize)
	return restarea.ReplyPage{Replies: list, NextCursor: next}, err
}

func (f *fakeService) GetReply(_ context.Context, id string, _ restarea.ReadOptions) (restarea.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return restarea.Entry{}, f.err
	}
	for parent, rs := range f.replies {
		for _, r := range rs {
			if r.ID == id && !f.hidden[id] {
				if _, ok := f.question(parent); ok {
					return r, nil
				}
			}
		}
	}
	return restarea.Entry{}, notFound()
}
