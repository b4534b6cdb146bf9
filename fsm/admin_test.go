package fsm_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

func TestAdminCommands(t *testing.T) {
	tests := []struct {
		name    string
		history []fsm.Op // applied to a stored question before the last op
		op      fsm.Op
		unknown bool // the last op names an id never stored
		code    restarea.Code
		visible bool // the question is public afterwards
		count   uint64
	}{
		{name: "hide", op: fsm.OpHide, count: 1},
		{name: "hide twice", history: []fsm.Op{fsm.OpHide}, op: fsm.OpHide, count: 1},
		{name: "unhide", history: []fsm.Op{fsm.OpHide}, op: fsm.OpUnhide, visible: true, count: 1},
		{name: "unhide a visible entry", op: fsm.OpUnhide, visible: true, count: 1},
		{name: "delete", op: fsm.OpDelete, count: 0},
		{name: "delete twice", history: []fsm.Op{fsm.OpDelete}, op: fsm.OpDelete, count: 0},
		{name: "delete a hidden entry", history: []fsm.Op{fsm.OpHide}, op: fsm.OpDelete, count: 0},
		{name: "hide a deleted entry", history: []fsm.Op{fsm.OpDelete}, op: fsm.OpHide, code: restarea.CodeNotFound, count: 0},
		{name: "unhide a deleted entry", history: []fsm.Op{fsm.OpDelete}, op: fsm.OpUnhide, code: restarea.CodeNotFound, count: 0},
		{name: "delete unknown", op: fsm.OpDelete, unknown: true, code: restarea.CodeNotFound, visible: true, count: 1},
		{name: "hide unknown", op: fsm.OpHide, unknown: true, code: restarea.CodeNotFound, visible: true, count: 1},
		{name: "unhide unknown", op: fsm.OpUnhide, unknown: true, code: restarea.CodeNotFound, visible: true, count: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			id := h.create(question(t, "q"))
			for _, op := range tc.history {
				if r := h.admin(op, id); r.Err != nil {
					t.Fatalf("%s: %+v", op, r.Err)
				}
			}
			target := id
			if tc.unknown {
				target = uuid.NewString()
			}
			r := h.admin(tc.op, target)
			if code(r) != tc.code {
				t.Fatalf("code %q, want %q", code(r), tc.code)
			}
			if r.Err == nil && (r.Entry == nil || r.Entry.ID != target) {
				t.Errorf("result entry %+v, want id %s", r.Entry, target)
			}
			_, err := h.f.Thread(id)
			if public := err == nil; public != tc.visible {
				t.Errorf("question public: %v, want %v (err %v)", public, tc.visible, err)
			}
			page, err := h.f.Threads("", 0)
			if err != nil {
				t.Fatal(err)
			}
			if listed := len(page.Threads) == 1; listed != tc.visible {
				t.Errorf("question listed: %v, want %v", listed, tc.visible)
			}
			if n := h.count(); n != tc.count {
				t.Errorf("Count() = %d, want %d", n, tc.count)
			}
		})
	}
}

// Hiding or deleting a question makes its replies unreachable through
// public reads without deleting them; unhiding brings them back.
func TestQuestionVisibilityCoversReplies(t *testing.T) {
	h := newHarness(t)
	qid := h.create(question(t, "q"))
	rid := h.create(reply(t, qid, "answer"))
	hidden := h.create(reply(t, qid, "hidden answer"))
	h.admin(fsm.OpHide, hidden)

	wantReplies := func(step string, public bool, n int) {
		t.Helper()
		_, errReply := h.f.Reply(rid)
		page, errList := h.f.Replies(qid, "", 0)
		if public {
			if errReply != nil || errList != nil || len(page.Replies) != n {
				t.Errorf("%s: Reply err %v, Replies err %v, %d replies; want public, %d", step, errReply, errList, len(page.Replies), n)
			}
			return
		}
		if restarea.ErrorCode(errReply) != restarea.CodeNotFound || restarea.ErrorCode(errList) != restarea.CodeNotFound {
			t.Errorf("%s: Reply err %v, Replies err %v; want not_found", step, errReply, errList)
		}
	}
	wantReplies("visible", true, 1)
	if _, err := h.f.Reply(hidden); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("hidden reply: err %v, want not_found", err)
	}
	if _, err := h.f.Reply(qid); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("Reply(question id): err %v, want not_found", err)
	}
	if _, err := h.f.Thread(rid); restarea.ErrorCode(err) != restarea.CodeNotFound {
		t.Errorf("Thread(reply id): err %v, want not_found", err)
	}
	h.admin(fsm.OpHide, qid)
	wantReplies("question hidden", false, 0)
	h.admin(fsm.OpUnhide, qid)
	wantReplies("question unhidden", true, 1)
	h.admin(fsm.OpDelete, qid)
	wantReplies("question deleted", false, 0)
	if _, found, _ := h.f.Entry(rid); !found {
		t.Error("reply of a deleted question was deleted")
	}
}

func TestSettings(t *testing.T) {
	l := func(n, w int) *restarea.Limit { return &restarea.Limit{Count: n, WindowSeconds: w} }
	def := restarea.DefaultSettings()
	type step struct {
		patch      restarea.SettingsPatch
		fromConfig bool
		code       restarea.Code
	}
	tests := []struct {
		name  string
		steps []step
		want  restarea.Settings
	}{
		{name: "defaults", want: def},
		{
			name:  "configure sets limits",
			steps: []step{{patch: restarea.SettingsPatch{PerSourceLimit: l(5, 10), GlobalLimit: l(100, 60)}, fromConfig: true}},
			want:  restarea.Settings{PerSourceLimit: *l(5, 10), GlobalLimit: *l(100, 60)},
		},
		{
			name: "configure again changes unset limits",
			steps: []step{
				{patch: restarea.SettingsPatch{PerSourceLimit: l(5, 10)}, fromConfig: true},
				{patch: restarea.SettingsPatch{PerSourceLimit: l(6, 10)}, fromConfig: true},
			},
			want: restarea.Settings{PerSourceLimit: *l(6, 10), GlobalLimit: def.GlobalLimit},
		},
		{
			name: "operator limit wins over later configuration",
			steps: []step{
				{patch: restarea.SettingsPatch{PerSourceLimit: l(5, 10)}},
				{patch: restarea.SettingsPatch{PerSourceLimit: l(7, 10), GlobalLimit: l(9, 60)}, fromConfig: true},
			},
			want: restarea.Settings{PerSourceLimit: *l(5, 10), GlobalLimit: *l(9, 60)},
		},
		{
			name: "operator global limit wins over later configuration",
			steps: []step{
				{patch: restarea.SettingsPatch{GlobalLimit: l(3, 60)}},
				{patch: restarea.SettingsPatch{PerSourceLimit: l(7, 10), GlobalLimit: l(9, 60)}, fromConfig: true},
			},
			want: restarea.Settings{PerSourceLimit: *l(7, 10), GlobalLimit: *l(3, 60)},
		},
		{
			name: "configuration never changes writes_disabled",
			steps: []step{
				{patch: restarea.SettingsPatch{WritesDisabled: ptr(true)}},
				{patch: restarea.SettingsPatch{WritesDisabled: ptr(false)}, fromConfig: true},
			},
			want: restarea.Settings{WritesDisabled: true, PerSourceLimit: def.PerSourceLimit, GlobalLimit: def.GlobalLimit},
		},
		{
			name: "writes_disabled alone keeps configured limits open",
			steps: []step{
				{patch: restarea.SettingsPatch{WritesDisabled: ptr(true)}},
				{patch: restarea.SettingsPatch{PerSourceLimit: l(7, 10)}, fromConfig: true},
			},
			want: restarea.Settings{WritesDisabled: true, PerSourceLimit: *l(7, 10), GlobalLimit: def.GlobalLimit},
		},
		{
			name: "invalid operator limit is refused and does not pin the limit",
			steps: []step{
				{patch: restarea.SettingsPatch{PerSourceLimit: l(0, 10)}, code: restarea.CodeInvalidRequest},
				{patch: restarea.SettingsPatch{GlobalLimit: l(5, 0)}, code: restarea.CodeInvalidRequest},
				{patch: restarea.SettingsPatch{PerSourceLimit: l(5, 31*24*3600+1)}, code: restarea.CodeInvalidRequest},
				{patch: restarea.SettingsPatch{PerSourceLimit: l(4, 10), WritesDisabled: ptr(true), GlobalLimit: l(-1, 10)}, code: restarea.CodeInvalidRequest},
				{patch: restarea.SettingsPatch{PerSourceLimit: l(7, 10)}, fromConfig: true},
			},
			want: restarea.Settings{PerSourceLimit: *l(7, 10), GlobalLimit: def.GlobalLimit},
		},
		{
			name:  "invalid configured limit is refused",
			steps: []step{{patch: restarea.SettingsPatch{GlobalLimit: l(2_000_000, 10)}, fromConfig: true, code: restarea.CodeInvalidRequest}},
			want:  def,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for i, s := range tc.steps {
				r := h.settings(s.patch, s.fromConfig)
				if code(r) != s.code {
					t.Fatalf("step %d: code %q, want %q", i, code(r), s.code)
				}
				if r.Err == nil && r.Settings == nil {
					t.Fatalf("step %d: no settings in the result", i)
				}
			}
			got, err := h.f.Settings()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("settings %+v, want %+v", got, tc.want)
			}
		})
	}
}
