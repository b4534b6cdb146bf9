package fsm_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// Deleted and hidden entries, parents, the global limit and operator posts.
func TestAdmissionRules(t *testing.T) { runPostCases(t, admissionCases()) }

func admissionCases() []postCase {
	return []postCase{
		{
			name: "replay of a deleted entry",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				h.admin(fsm.OpDelete, id)
				return id, try(h, q, "a", "att-2")
			},
			status: 410, code: restarea.CodeDeleted, count: 0,
		},
		{
			name: "replay of a deleted entry while writes are disabled",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				h.admin(fsm.OpDelete, id)
				h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(true)})
				return id, try(h, q, "a", "att-2")
			},
			status: 410, code: restarea.CodeDeleted, count: 0,
		},
		{
			name: "deleted request_id with different content",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				h.admin(fsm.OpDelete, id)
				other := q
				other.Actor.Model = "m2"
				return id, try(h, other, "a", "att-2")
			},
			status: 409, code: restarea.CodeConflict, count: 0,
		},
		{
			name: "replay of a hidden entry",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				h.admin(fsm.OpHide, id)
				return id, try(h, q, "a", "att-2")
			},
			status: 200, sameID: true, visible: ptr(false), count: 1,
		},
		{
			name: "replay of an unhidden entry",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				id := h.create(q)
				h.admin(fsm.OpHide, id)
				h.admin(fsm.OpUnhide, id)
				return id, try(h, q, "a", "att-2")
			},
			status: 200, sameID: true, visible: ptr(true), count: 1,
		},
		{
			name: "replay of a reply whose question is hidden",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				qid := h.create(question(t, "q"))
				r := reply(t, qid, "answer")
				id := h.create(r)
				h.admin(fsm.OpHide, qid)
				return id, try(h, r, "a", "att-2")
			},
			status: 200, sameID: true, visible: ptr(false), count: 2,
		},
		{
			name: "replay of a reply whose question is deleted",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				qid := h.create(question(t, "q"))
				r := reply(t, qid, "answer")
				id := h.create(r)
				h.admin(fsm.OpDelete, qid)
				return id, try(h, r, "a", "att-2")
			},
			status: 200, sameID: true, visible: ptr(false), count: 1,
		},
		{
			name: "reply to a visible question",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				qid := h.create(question(t, "q"))
				return qid, try(h, reply(t, qid, "answer"), "a", "att-1")
			},
			status: 201, count: 2,
		},
		{
			name: "reply to a missing question",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				return "", try(h, reply(t, uuid.NewString(), "answer"), "a", "att-1")
			},
			status: 404, code: restarea.CodeParentNotFound, count: 0,
		},
		{
			name: "reply to a hidden question",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				qid := h.create(question(t, "q"))
				h.admin(fsm.OpHide, qid)
				return qid, try(h, reply(t, qid, "answer"), "a", "att-1")
			},
			status: 404, code: restarea.CodeParentNotFound, count: 1,
		},
		{
			name: "reply to a deleted question",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				qid := h.create(question(t, "q"))
				h.admin(fsm.OpDelete, qid)
				return qid, try(h, reply(t, qid, "answer"), "a", "att-1")
			},
			status: 404, code: restarea.CodeParentNotFound, count: 0,
		},
		{
			name: "reply to an expired question",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				qid := h.create(question(t, "q"))
				h.advance(2 * time.Hour)
				h.expire(time.Hour, time.Hour, 0)
				return qid, try(h, reply(t, qid, "answer"), "a", "att-1")
			},
			status: 404, code: restarea.CodeParentNotFound, count: 0,
		},
		{
			name: "reply to a reply",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				qid := h.create(question(t, "q"))
				rid := h.create(reply(t, qid, "answer"))
				return rid, try(h, reply(t, rid, "nested"), "a", "att-1")
			},
			status: 422, code: restarea.CodeInvalidParent, count: 2,
		},
		{
			name: "reply to a missing question while writes are disabled",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(true)})
				return "", try(h, reply(t, uuid.NewString(), "answer"), "a", "att-1")
			},
			status: 503, code: restarea.CodeWritesDisabled, retry: true, count: 0,
		},
		{
			name: "third new entry over the global limit",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(global2)
				h.create(question(t, "q1"))
				h.create(question(t, "q2"))
				return "", try(h, question(t, "q3"), "a", "att-1")
			},
			status: 429, code: restarea.CodeGlobalRateLimited, retry: true, count: 2,
		},
		{
			name: "replay while the global limit is reached",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(global2)
				q := question(t, "q1")
				id := h.create(q)
				h.create(question(t, "q2"))
				return id, try(h, q, "a", "att-2")
			},
			status: 200, sameID: true, count: 2,
		},
		{
			name: "conflict while the global limit is reached",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(global2)
				q := question(t, "q1")
				id := h.create(q)
				h.create(question(t, "q2"))
				q.Body = "changed"
				return id, try(h, q, "a", "att-2")
			},
			status: 409, code: restarea.CodeConflict, count: 2,
		},
		{
			name: "new entry after the global window",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(global2)
				h.create(question(t, "q1"))
				h.create(question(t, "q2"))
				h.advance(time.Hour + time.Second)
				return "", try(h, question(t, "q3"), "a", "att-1")
			},
			status: 201, count: 3,
		},
		{
			name: "operator post bypasses the global limit",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(global2)
				h.create(question(t, "q1"))
				h.create(question(t, "q2"))
				r := h.operatorPost(question(t, "q3"), "att-1")
				if r.Entry == nil || !r.Entry.ByOperator {
					t.Errorf("operator post not flagged by_operator: %+v", r.Entry)
				}
				return "", flatten(r)
			},
			status: 201, count: 3,
		},
		{
			name: "operator post bypasses the per-source limit",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(limit2)
				for i := 0; i < 3; i++ {
					h.operatorPost(question(t, "q"), uuid.NewString())
				}
				return "", flatten(h.operatorPost(question(t, "q"), "att-1"))
			},
			status: 201, count: 4,
		},
		{
			name: "operator post bypasses writes_disabled",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(restarea.SettingsPatch{WritesDisabled: ptr(true)})
				return "", flatten(h.operatorPost(question(t, "q"), "att-1"))
			},
			status: 201, count: 1,
		},
		{
			name: "operator replay with another attempt",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				q := question(t, "q")
				first := flatten(h.operatorPost(q, "att-1"))
				return first.id, flatten(h.operatorPost(q, "att-2"))
			},
			status: 200, sameID: true, count: 1,
		},
		{
			name: "operator posts do not fill the global window",
			run: func(t *testing.T, h *harness) (string, *outcome) {
				h.mustSettings(global2)
				h.operatorPost(question(t, "q1"), "att-1")
				h.operatorPost(question(t, "q2"), "att-2")
				h.create(question(t, "q3"))
				return "", try(h, question(t, "q4"), "a", "att-3")
			},
			status: 201, count: 4,
		},
	}
}
