package testkit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
)

// FakeEpoch is the time of the first entry a FakeService creates; each
// later one is a second after the one before.
var FakeEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// FakeBaseURL is the public base URL the entries of a FakeService name.
const FakeBaseURL = "https://rest.example"

// Call is one call a FakeService received, with the arguments that matter
// to it (the others are zero). Req is the request after the service's
// normalisation.
type Call struct {
	Method string // "Post", "ListThreads", "HideEntry", …: the method's name
	ID     string // the entry's or thread's id
	Req    restarea.PostRequest
	Meta   restarea.PostMeta
	List   restarea.ListOptions
	Read   restarea.ReadOptions
	Patch  restarea.SettingsPatch
	Query  restarea.SearchQuery
	Find   restarea.FindQuery
}

// FakeService is an in-memory restarea.Service, restarea.AdminService and
// restarea.SearchService with the rules of the real one that adapters
// meet: Post normalises and validates the request (req.Normalize, and
// NormalizeOperator for OperatorPost) and answers 400 before anything
// else, replays a request_id with the same content and refuses it with
// other content (conflict), refuses a reply whose question is not public
// (parent_not_found) or is a reply (invalid_parent), and a post while
// writes are disabled; reads show public entries only, in pages whose
// cursors are decimal offsets and whose entry text ends at
// restarea.MaxPageBytes; hide, unhide and delete change what reads
// show, and delete keeps a tombstone (deleted) for the request_id.
// Rate limits are not enforced.
//
// For adapter tests it records every call that passed validation (Calls,
// Last) and runs a hook before answering it (SetHook, FailWith): the hook
// may return an error, which is answered instead, panic or block. Stub
// makes a method answer a canned value.
//
// The zero value is not usable; call NewFakeService.
type FakeService struct {
	mu       sync.Mutex
	entries  []*restarea.Entry // in creation order
	byID     map[string]*restarea.Entry
	byReq    map[string]*restarea.Entry
	deleted  map[string]bool // by entry id
	settings restarea.Settings
	audit    []restarea.AuditRecord // oldest first
	pageSize int
	clock    time.Time
	hook     func(ctx context.Context, c Call) error
	stubs    map[string]any
	calls    []Call
}

var (
	_ restarea.Service       = (*FakeService)(nil)
	_ restarea.AdminService  = (*FakeService)(nil)
	_ restarea.SearchService = (*FakeService)(nil)
)

// NewFakeService returns an empty fake with the default settings.
func NewFakeService() *FakeService {
	return &FakeService{
		byID: map[string]*restarea.Entry{}, byReq: map[string]*restarea.Entry{}, deleted: map[string]bool{},
		settings: restarea.DefaultSettings(), pageSize: restarea.MaxPageLimit, clock: FakeEpoch,
		stubs: map[string]any{},
	}
}

// Seeding and scripting.

// Add stores e as it is, without a call, and returns it: its ID is
// filled when empty, its CreatedAt when zero, its URLs always. Entries
// keep the order they were added in: questions are listed newest added
// first, replies oldest added first.
func (f *FakeService) Add(e restarea.Entry) restarea.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.add(e)
}

// AddQuestion stores a visible question and returns it.
func (f *FakeService) AddQuestion(title, body string) restarea.Entry {
	return f.Add(restarea.Entry{
		Type: restarea.TypeQuestion, Title: title, Body: body, Actor: restarea.Actor{Name: "asker"},
		SubmissionMode: restarea.ModeAutonomous, Channel: restarea.ChannelHTTP, Visible: true,
	})
}

// AddReply stores a visible reply to parentID and returns it.
func (f *FakeService) AddReply(parentID, body string) restarea.Entry {
	return f.Add(restarea.Entry{
		Type: restarea.TypeReply, ParentID: parentID, Body: body, Actor: restarea.Actor{Name: "replier"},
		SubmissionMode: restarea.ModeManual, Channel: restarea.ChannelHTTP, Visible: true,
	})
}

// SetVisible changes an entry's visibility without a call.
func (f *FakeService) SetVisible(id string, visible bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.byID[id]; e != nil {
		e.Visible = visible
	}
}

// SetPageSize sets the most entries a page holds, however many are asked
// for (a service may answer fewer).
func (f *FakeService) SetPageSize(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pageSize = n
}

// SetHook sets the function run before every call is answered (after a
// Post's validation); nil removes it. An error it returns is the answer.
func (f *FakeService) SetHook(h func(ctx context.Context, c Call) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// FailWith makes every call answer err (nil: answer normally again) and
// returns f.
func (f *FakeService) FailWith(err error) *FakeService {
	if err == nil {
		f.SetHook(nil)
		return f
	}
	f.SetHook(func(context.Context, Call) error { return err })
	return f
}

// PanicWith makes every call panic with v and returns f.
func (f *FakeService) PanicWith(v any) *FakeService {
	f.SetHook(func(context.Context, Call) error { panic(v) })
	return f
}

// ResetCalls forgets the calls received so far.
func (f *FakeService) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// Stub makes method (a name as in Call.Method) answer result, which must
// be of the method's result type (restarea.ThreadPage for ListThreads,
// restarea.Entry for GetThread, …), instead of looking at the state. The
// call is still recorded and the hook still runs.
func (f *FakeService) Stub(method string, result any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stubs[method] = result
}

// Calls returns the calls received so far, oldest first.
func (f *FakeService) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Last returns how many calls were received and the last of them.
func (f *FakeService) Last() (int, Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return 0, Call{}
	}
	return len(f.calls), f.calls[len(f.calls)-1]
}

// Entries returns every stored entry, deleted ones included, in creation
// order, as an operator sees them (with request_id).
func (f *FakeService) Entries() []restarea.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]restarea.Entry, len(f.entries))
	for i, e := range f.entries {
		out[i] = *e
	}
	return out
}

// begin records c, runs the hook and returns the stub of c's method, if
// any. An error is the call's answer.
func (f *FakeService) begin(ctx context.Context, c Call) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	h, stub := f.hook, f.stubs[c.Method]
	f.mu.Unlock()
	if h != nil {
		if err := h(ctx, c); err != nil {
			return nil, err
		}
	}
	return stub, nil
}

// stubbed answers a call: the stub when there is one, else compute().
func stubbed[T any](f *FakeService, ctx context.Context, c Call, compute func() (T, error)) (T, error) {
	var zero T
	stub, err := f.begin(ctx, c)
	if err != nil {
		return zero, err
	}
	if stub != nil {
		v, ok := stub.(T)
		if !ok {
			panic(fmt.Sprintf("testkit.FakeService: stub of %s is %T, want %T", c.Method, stub, zero))
		}
		return v, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return compute()
}

// add stores e; f.mu is held.
func (f *FakeService) add(e restarea.Entry) *restarea.Entry {
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = f.clock
	}
	f.clock = f.clock.Add(time.Second)
	e.SetURLs(FakeBaseURL)
	p := &e
	f.entries = append(f.entries, p)
	f.byID[e.ID] = p
	if e.RequestID != "" {
		f.byReq[e.RequestID] = p
	}
	return p
}

// The service.

func notFound(what, id string) error {
	return restarea.Errorf(restarea.CodeNotFound, "%s %s not found", what, id)
}

// public returns e as public reads show it; f.mu is held.
func public(e *restarea.Entry) restarea.Entry {
	c := *e
	c.RequestID = ""
	return c
}

// publicQuestion returns the question id when it is public; f.mu is held.
func (f *FakeService) publicQuestion(id string) *restarea.Entry {
	e := f.byID[id]
	if e == nil || e.Type != restarea.TypeQuestion || !e.Visible || f.deleted[id] {
		return nil
	}
	return e
}

// publicReply returns the reply id when it and its question are public;
// f.mu is held.
func (f *FakeService) publicReply(id string) *restarea.Entry {
	e := f.byID[id]
	if e == nil || e.Type != restarea.TypeReply || !e.Visible || f.deleted[id] || f.publicQuestion(e.ParentID) == nil {
		return nil
	}
	return e
}

// Post decides req as the state machine does (see FakeService).
func (f *FakeService) Post(ctx context.Context, req restarea.PostRequest, meta restarea.PostMeta) (restarea.PostResult, error) {
	req, err := req.Normalize()
	if err != nil {
		return restarea.PostResult{}, err
	}
	return stubbed(f, ctx, Call{Method: "Post", Req: req, Meta: meta}, func() (restarea.PostResult, error) {
		if f.settings.WritesDisabled {
			return restarea.PostResult{}, restarea.Errorf(restarea.CodeWritesDisabled, "writes are disabled").WithRetryAfter(30 * time.Second)
		}
		return f.post(req, meta, false)
	})
}

// OperatorPost is Post for the operator: questions only, by_operator.
func (f *FakeService) OperatorPost(ctx context.Context, req restarea.PostRequest, meta restarea.PostMeta) (restarea.PostResult, error) {
	req, err := req.NormalizeOperator()
	if err != nil {
		return restarea.PostResult{}, err
	}
	return stubbed(f, ctx, Call{Method: "OperatorPost", Req: req, Meta: meta}, func() (restarea.PostResult, error) {
		return f.post(req, meta, true)
	})
}

// post decides a normalised request; f.mu is held.
func (f *FakeService) post(req restarea.PostRequest, meta restarea.PostMeta, byOperator bool) (restarea.PostResult, error) {
	if e, ok := f.byReq[req.RequestID]; ok {
		switch {
		case f.deleted[e.ID]:
			return restarea.PostResult{}, restarea.Errorf(restarea.CodeDeleted, "the entry of this request_id was deleted by an operator")
		case !restarea.SameContent(e.Content(), req.Content()):
			return restarea.PostResult{}, restarea.Errorf(restarea.CodeConflict, "request_id was already used with different content")
		}
		return restarea.PostResult{Entry: *e, Replayed: true}, nil
	}
	if req.Type == restarea.TypeReply {
		if p := f.byID[req.ParentID]; p != nil && p.Type == restarea.TypeReply {
			return restarea.PostResult{}, restarea.Errorf(restarea.CodeInvalidParent, "parent %s is a reply", req.ParentID)
		}
		if f.publicQuestion(req.ParentID) == nil {
			return restarea.PostResult{}, restarea.Errorf(restarea.CodeParentNotFound, "parent %s not found", req.ParentID)
		}
	}
	e := f.add(restarea.Entry{
		RequestID: req.RequestID, Type: req.Type, ParentID: req.ParentID, Title: req.Title, Body: req.Body,
		Actor: req.Actor, SubmissionMode: req.SubmissionMode, Channel: meta.Channel, Visible: true, ByOperator: byOperator,
	})
	return restarea.PostResult{Entry: *e}, nil
}

// page cuts list at cursor (a decimal offset) to at most limit entries
// and the fake's page size and, when size is not nil, to
// restarea.MaxPageBytes of size (at least one entry), as the real
// service's pages are.
func page[T any](list []T, opts restarea.ListOptions, most int, size func(*T) int) ([]T, *string, error) {
	start := 0
	if opts.Cursor != "" {
		n, err := strconv.Atoi(opts.Cursor)
		if err != nil || n < 0 || n > len(list) {
			return nil, nil, restarea.Errorf(restarea.CodeInvalidRequest, "cursor is not valid")
		}
		start = n
	}
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = restarea.DefaultPageLimit
	case limit < 0 || limit > restarea.MaxPageLimit:
		return nil, nil, restarea.Errorf(restarea.CodeInvalidRequest, "limit must be between 1 and %d", restarea.MaxPageLimit)
	}
	end := min(start+min(limit, most), len(list))
	if size != nil {
		total := 0
		for i := start; i < end; i++ {
			if total += size(&list[i]); i > start && total > restarea.MaxPageBytes {
				end = i
			}
		}
	}
	var next *string
	if end < len(list) {
		s := strconv.Itoa(end)
		next = &s
	}
	return list[start:end:end], next, nil
}

// ListThreads returns public questions, newest first.
func (f *FakeService) ListThreads(ctx context.Context, opts restarea.ListOptions) (restarea.ThreadPage, error) {
	return stubbed(f, ctx, Call{Method: "ListThreads", List: opts}, func() (restarea.ThreadPage, error) {
		all := []restarea.Entry{}
		for i := len(f.entries) - 1; i >= 0; i-- {
			if q := f.publicQuestion(f.entries[i].ID); q != nil {
				all = append(all, public(q))
			}
		}
		es, next, err := page(all, opts, f.pageSize, (*restarea.Entry).TextBytes)
		return restarea.ThreadPage{Threads: es, NextCursor: next}, err
	})
}

// GetThread returns a public question.
func (f *FakeService) GetThread(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	return stubbed(f, ctx, Call{Method: "GetThread", ID: id, Read: opts}, func() (restarea.Entry, error) {
		if q := f.publicQuestion(id); q != nil {
			return public(q), nil
		}
		return restarea.Entry{}, notFound("thread", id)
	})
}

// ListReplies returns a public question's public replies, oldest first,
// or newest first with opts.NewestFirst (whose cursors are offsets from
// the newest).
func (f *FakeService) ListReplies(ctx context.Context, threadID string, opts restarea.ListOptions) (restarea.ReplyPage, error) {
	return stubbed(f, ctx, Call{Method: "ListReplies", ID: threadID, List: opts}, func() (restarea.ReplyPage, error) {
		if f.publicQuestion(threadID) == nil {
			return restarea.ReplyPage{}, notFound("thread", threadID)
		}
		all := []restarea.Entry{}
		for _, e := range f.entries {
			if e.ParentID == threadID && f.publicReply(e.ID) != nil {
				all = append(all, public(e))
			}
		}
		if opts.NewestFirst {
			slices.Reverse(all)
		}
		es, next, err := page(all, opts, f.pageSize, (*restarea.Entry).TextBytes)
		return restarea.ReplyPage{Replies: es, NextCursor: next}, err
	})
}

// GetReply returns a public reply of a public question.
func (f *FakeService) GetReply(ctx context.Context, id string, opts restarea.ReadOptions) (restarea.Entry, error) {
	return stubbed(f, ctx, Call{Method: "GetReply", ID: id, Read: opts}, func() (restarea.Entry, error) {
		if r := f.publicReply(id); r != nil {
			return public(r), nil
		}
		return restarea.Entry{}, notFound("reply", id)
	})
}

// The admin service.

// record appends an audit record of an operator action; f.mu is held.
func (f *FakeService) record(ctx context.Context, r restarea.AuditRecord) {
	r.Seq = uint64(len(f.audit) + 1)
	r.Time = f.clock
	r.Source = restarea.OriginFrom(ctx)
	f.audit = append(f.audit, r)
}

// setVisible is HideEntry and UnhideEntry.
func (f *FakeService) setVisible(ctx context.Context, method, id string, visible bool) (restarea.Entry, error) {
	return stubbed(f, ctx, Call{Method: method, ID: id}, func() (restarea.Entry, error) {
		e := f.byID[id]
		if e == nil || f.deleted[id] {
			return restarea.Entry{}, notFound("entry", id)
		}
		if e.Visible != visible {
			e.Visible = visible
			action := restarea.AuditHide
			if visible {
				action = restarea.AuditUnhide
			}
			f.record(ctx, restarea.AuditRecord{Action: action, EntryID: id, EntryType: e.Type})
		}
		return *e, nil
	})
}

// HideEntry hides an entry.
func (f *FakeService) HideEntry(ctx context.Context, id string) (restarea.Entry, error) {
	return f.setVisible(ctx, "HideEntry", id, false)
}

// UnhideEntry shows a hidden entry again.
func (f *FakeService) UnhideEntry(ctx context.Context, id string) (restarea.Entry, error) {
	return f.setVisible(ctx, "UnhideEntry", id, true)
}

// DeleteEntry erases an entry's text and keeps its tombstone.
func (f *FakeService) DeleteEntry(ctx context.Context, id string) error {
	_, err := stubbed(f, ctx, Call{Method: "DeleteEntry", ID: id}, func() (struct{}, error) {
		e := f.byID[id]
		if e == nil {
			return struct{}{}, notFound("entry", id)
		}
		if !f.deleted[id] {
			f.deleted[id] = true
			e.Title, e.Body, e.Visible = "", "", false
			f.record(ctx, restarea.AuditRecord{Action: restarea.AuditDelete, EntryID: id, EntryType: e.Type})
		}
		return struct{}{}, nil
	})
	return err
}

// ListEntries returns every entry but the deleted ones, hidden ones
// included, with its request_id, newest first.
func (f *FakeService) ListEntries(ctx context.Context, opts restarea.ListOptions) (restarea.EntryPage, error) {
	return stubbed(f, ctx, Call{Method: "ListEntries", List: opts}, func() (restarea.EntryPage, error) {
		all := []restarea.Entry{}
		for i := len(f.entries) - 1; i >= 0; i-- {
			if e := f.entries[i]; !f.deleted[e.ID] {
				all = append(all, *e)
			}
		}
		es, next, err := page(all, opts, f.pageSize, (*restarea.Entry).TextBytes)
		return restarea.EntryPage{Entries: es, NextCursor: next}, err
	})
}

// Settings returns the settings in force.
func (f *FakeService) Settings(ctx context.Context) (restarea.Settings, error) {
	return stubbed(f, ctx, Call{Method: "Settings"}, func() (restarea.Settings, error) {
		return f.settings, nil
	})
}

// UpdateSettings validates and applies patch.
func (f *FakeService) UpdateSettings(ctx context.Context, patch restarea.SettingsPatch) (restarea.Settings, error) {
	if err := patch.Validate(); err != nil {
		return restarea.Settings{}, err
	}
	return stubbed(f, ctx, Call{Method: "UpdateSettings", Patch: patch}, func() (restarea.Settings, error) {
		f.settings = patch.Apply(f.settings)
		f.record(ctx, restarea.AuditRecord{Action: restarea.AuditSettings})
		return f.settings, nil
	})
}

// ListAudit returns the operator actions, newest first.
func (f *FakeService) ListAudit(ctx context.Context, opts restarea.ListOptions) (restarea.AuditPage, error) {
	return stubbed(f, ctx, Call{Method: "ListAudit", List: opts}, func() (restarea.AuditPage, error) {
		all := []restarea.AuditRecord{}
		for i := len(f.audit) - 1; i >= 0; i-- {
			all = append(all, f.audit[i])
		}
		rs, next, err := page(all, opts, f.pageSize, nil)
		return restarea.AuditPage{Records: rs, NextCursor: next}, err
	})
}

// The search service.

// Search finds public entries whose title or body contains q.Q (ignoring
// case), newest first, with the whole body as the snippet.
func (f *FakeService) Search(ctx context.Context, q restarea.SearchQuery) (restarea.SearchPage, error) {
	q, err := q.Validate()
	if err != nil {
		return restarea.SearchPage{}, err
	}
	return stubbed(f, ctx, Call{Method: "Search", Query: q}, func() (restarea.SearchPage, error) {
		want := strings.ToLower(q.Q)
		all := []restarea.SearchResult{}
		for i := len(f.entries) - 1; i >= 0; i-- {
			e := f.entries[i]
			if f.publicQuestion(e.ID) == nil && f.publicReply(e.ID) == nil {
				continue
			}
			if q.Type != "" && e.Type != q.Type || q.Actor != "" && e.Actor.Name != q.Actor || e.CreatedAt.Before(q.Since) {
				continue
			}
			if !strings.Contains(strings.ToLower(e.Title+"\n"+e.Body), want) {
				continue
			}
			all = append(all, restarea.SearchResult{Entry: public(e), Score: 1, Snippet: e.Body,
				Parts: []restarea.SnippetPart{{Text: e.Body}}})
		}
		rs, next, err := page(all, restarea.ListOptions{Cursor: q.Cursor, Limit: q.Limit}, f.pageSize, nil)
		return restarea.SearchPage{Results: rs, NextCursor: next}, err
	})
}

// FindPosts lists the public entries whose body is exactly q.Body, newest
// first, with q's filters, in pages like the other lists.
func (f *FakeService) FindPosts(ctx context.Context, q restarea.FindQuery) (restarea.FindPage, error) {
	q, err := q.Validate()
	if err != nil {
		return restarea.FindPage{}, err
	}
	return stubbed(f, ctx, Call{Method: "FindPosts", Find: q}, func() (restarea.FindPage, error) {
		all := []restarea.Entry{}
		for i := len(f.entries) - 1; i >= 0; i-- {
			e := f.entries[i]
			if f.publicQuestion(e.ID) == nil && f.publicReply(e.ID) == nil {
				continue
			}
			if e.Body != q.Body || q.Type != "" && e.Type != q.Type || q.Actor != "" && e.Actor.Name != q.Actor ||
				q.ParentID != "" && e.ParentID != q.ParentID || e.CreatedAt.Before(q.Since) {
				continue
			}
			all = append(all, public(e))
		}
		es, next, err := page(all, restarea.ListOptions{Cursor: q.Cursor, Limit: q.Limit}, f.pageSize, nil)
		return restarea.FindPage{Entries: es, NextCursor: next}, err
	})
}
