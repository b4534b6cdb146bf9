package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// adminPaths are one request to every admin route.
var adminPaths = []struct{ method, path, body string }{
	{http.MethodGet, "/api/v1/admin/entries", ""},
	{http.MethodPost, "/api/v1/admin/entries", question("t")},
	{http.MethodPost, "/api/v1/admin/entries/" + entryID + "/hide", ""},
	{http.MethodPost, "/api/v1/admin/entries/" + entryID + "/unhide", ""},
	{http.MethodPost, "/api/v1/admin/entries/" + entryID + "/delete", ""},
	{http.MethodGet, "/api/v1/admin/settings", ""},
	{http.MethodPut, "/api/v1/admin/settings", `{"writes_disabled":true}`},
	{http.MethodGet, "/api/v1/admin", ""},
}

var bearer = []string{"Authorization", "Bearer " + token}

func TestAdminOff(t *testing.T) {
	f := testkit.NewFakeService()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no token", Config{Admin: f}},
		{"no admin service", Config{AdminToken: token, Admin: nil, Service: f}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Service, cfg.Logger = f, discard
			srv := serveExact(t, cfg)
			for _, p := range adminPaths {
				r := do(t, srv, p.method, p.path, p.body, bearer...)
				wantError(t, r, http.StatusNotFound, restarea.CodeNotFound, "")
			}
			if n, _ := f.Last(); n != 0 {
				t.Fatal("the admin service was called while the admin API is off")
			}
		})
	}
}

func TestAdminUnauthorized(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
	}{
		{"no header", nil},
		{"wrong token", []string{"Authorization", "Bearer nope"}},
		{"token prefix", []string{"Authorization", "Bearer " + token[:5]}},
		{"token with suffix", []string{"Authorization", "Bearer " + token + "x"}},
		{"basic scheme", []string{"Authorization", "Basic " + token}},
		{"no scheme", []string{"Authorization", token}},
		{"empty bearer", []string{"Authorization", "Bearer "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			// A burst above the number of paths: the throttle has its own test.
			srv := serve(t, f, Config{AdminToken: token, AuthBurst: 100})
			for _, p := range append(adminPaths, struct{ method, path, body string }{http.MethodDelete, "/api/v1/admin/unknown", ""}) {
				r := do(t, srv, p.method, p.path, p.body, tt.headers...)
				wantError(t, r, http.StatusUnauthorized, restarea.CodeUnauthorized, "bearer token")
				if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Fatalf("WWW-Authenticate %q", got)
				}
				if strings.Contains(r.raw, token) {
					t.Fatal("the token was echoed")
				}
			}
			if n, _ := f.Last(); n != 0 {
				t.Fatal("an unauthorised request reached the admin service")
			}
		})
	}
}

func TestAdminRoutes(t *testing.T) {
	upper := strings.ToUpper(entryID)
	tests := []struct {
		name    string
		method  string
		path    string
		body    string
		stub    any // a canned answer of the call; without one the fake holds the question entryID
		status  int
		want    testkit.Call
		rawPart string
	}{
		{
			name: "hide", method: http.MethodPost, path: "/api/v1/admin/entries/" + upper + "/hide",
			status: 200, want: testkit.Call{Method: "HideEntry", ID: entryID}, rawPart: `"visible":false`,
		},
		{
			name: "unhide", method: http.MethodPost, path: "/api/v1/admin/entries/" + entryID + "/unhide",
			status: 200, want: testkit.Call{Method: "UnhideEntry", ID: entryID}, rawPart: `"visible":true`,
		},
		{
			name: "delete", method: http.MethodPost, path: "/api/v1/admin/entries/" + upper + "/delete",
			status: 200, want: testkit.Call{Method: "DeleteEntry", ID: entryID},
			rawPart: `{"data":{"id":"` + entryID + `","deleted":true}}`,
		},
		{
			name: "list entries, empty", method: http.MethodGet, path: "/api/v1/admin/entries",
			stub:   restarea.EntryPage{},
			status: 200, want: testkit.Call{Method: "ListEntries"}, rawPart: `{"data":{"entries":[],"next_cursor":null}}`,
		},
		{
			name: "list entries, a page", method: http.MethodGet, path: "/api/v1/admin/entries?cursor=x&limit=5",
			stub:   restarea.EntryPage{Entries: []restarea.Entry{{ID: entryID, RequestID: requestID, Visible: false}}},
			status: 200, want: testkit.Call{Method: "ListEntries", List: restarea.ListOptions{Cursor: "x", Limit: 5}},
			rawPart: `"request_id":"` + requestID + `"`,
		},
		{
			name: "settings", method: http.MethodGet, path: "/api/v1/admin/settings",
			status: 200, want: testkit.Call{Method: "Settings"},
			rawPart: `{"data":{"writes_disabled":false,"per_source_limit":{"count":30,"window_seconds":60},"global_limit":{"count":2000,"window_seconds":3600}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			if tt.stub != nil {
				f.Stub(tt.want.Method, tt.stub)
			} else {
				f.Add(restarea.Entry{ID: entryID, Type: restarea.TypeQuestion, Title: "t", Body: "b", Visible: true})
			}
			srv := serve(t, f, Config{AdminToken: token})
			r := do(t, srv, tt.method, tt.path, tt.body, bearer...)
			if r.status != tt.status || !strings.Contains(r.raw, tt.rawPart) {
				t.Fatalf("got %d %s, want %d with %s", r.status, r.raw, tt.status, tt.rawPart)
			}
			if n, c := f.Last(); n != 1 || c != tt.want {
				t.Fatalf("admin call %+v (of %d), want %+v", c, n, tt.want)
			}
		})
	}
}

func TestAdminOperatorPost(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		replayed bool
		status   int
		msgPart  string
	}{
		{"new question", question("from the operator"), false, http.StatusCreated, ""},
		{"replay", question("from the operator"), true, http.StatusOK, ""},
		{"a reply is refused", strings.Replace(question("t"), `"type":"question"`, `"type":"reply","parent_id":"`+parentID+`"`, 1), false, http.StatusBadRequest, "type"},
		{"malformed body", `{"type":`, false, http.StatusBadRequest, "malformed JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			srv := serve(t, f, Config{AdminToken: token})
			if tt.replayed { // the same request a second time
				do(t, srv, http.MethodPost, "/api/v1/admin/entries", tt.body, bearer...)
				f.ResetCalls()
			}
			r := do(t, srv, http.MethodPost, "/api/v1/admin/entries", tt.body, bearer...)
			n, c := f.Last()
			if tt.status == http.StatusBadRequest {
				wantError(t, r, tt.status, restarea.CodeInvalidRequest, tt.msgPart)
				if n != 0 {
					t.Fatal("a bad request reached the admin service")
				}
				return
			}
			if r.status != tt.status {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			var got struct {
				ByOperator bool `json:"by_operator"`
				Replayed   bool `json:"replayed"`
			}
			decodeData(t, r, &got)
			if !got.ByOperator || got.Replayed != tt.replayed {
				t.Fatalf("answer %s", r.raw)
			}
			if n != 1 || c.Method != "OperatorPost" || c.Meta.Channel != restarea.ChannelHTTP || c.Meta.Source != "127.0.0.1" {
				t.Fatalf("admin call %+v (of %d)", c, n)
			}
		})
	}
}

func TestAdminSettingsPut(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		status  int
		msgPart string // for errors
		rawPart string // for success
	}{
		{"disable writes", `{"writes_disabled":true}`, 200, "", `"writes_disabled":true`},
		{"set limits", `{"per_source_limit":{"count":5,"window_seconds":10},"global_limit":{"count":100,"window_seconds":3600}}`, 200, "",
			`"per_source_limit":{"count":5,"window_seconds":10},"global_limit":{"count":100,"window_seconds":3600}`},
		{"empty patch", `{}`, 400, "at least one", ""},
		{"empty body", ``, 400, "empty", ""},
		{"unknown member", `{"writes_disabled":true,"max_posts":3}`, 400, `unknown field "max_posts"`, ""},
		{"unknown nested member", `{"global_limit":{"count":1,"window_seconds":1,"burst":2}}`, 400, `unknown field "burst"`, ""},
		{"wrong type", `{"writes_disabled":"yes"}`, 400, "writes_disabled", ""},
		{"bad limit", `{"per_source_limit":{"count":0,"window_seconds":60}}`, 400, "per_source_limit.count", ""},
		{"bad window", `{"global_limit":{"count":10,"window_seconds":0}}`, 400, "global_limit.window_seconds", ""},
		{"trailing data", `{"writes_disabled":true} x`, 400, "after the JSON object", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.NewFakeService()
			srv := serve(t, f, Config{AdminToken: token})
			r := do(t, srv, http.MethodPut, "/api/v1/admin/settings", tt.body, bearer...)
			n, c := f.Last()
			if tt.status != http.StatusOK {
				wantError(t, r, tt.status, restarea.CodeInvalidRequest, tt.msgPart)
				if n != 0 {
					t.Fatal("a bad patch reached the admin service")
				}
				return
			}
			if r.status != tt.status || !strings.Contains(r.raw, tt.rawPart) {
				t.Fatalf("got %d %s, want %s", r.status, r.raw, tt.rawPart)
			}
			if n != 1 || c.Method != "UpdateSettings" {
				t.Fatalf("admin call %+v (of %d)", c, n)
			}
		})
	}
}

func TestAdminErrors(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		err    error
		status int
		code   restarea.Code
	}{
		{"unknown admin path", http.MethodGet, "/api/v1/admin/nothing", nil, 404, restarea.CodeNotFound},
		{"bad id", http.MethodPost, "/api/v1/admin/entries/xyz/hide", nil, 400, restarea.CodeInvalidRequest},
		{"bad limit", http.MethodGet, "/api/v1/admin/entries?limit=0", nil, 400, restarea.CodeInvalidRequest},
		{"entry not found", http.MethodPost, "/api/v1/admin/entries/" + entryID + "/delete", restarea.Errorf(restarea.CodeNotFound, "no such entry"), 404, restarea.CodeNotFound},
		{"no leader", http.MethodPost, "/api/v1/admin/entries/" + entryID + "/unhide", restarea.Errorf(restarea.CodeUnavailable, "no leader"), 503, restarea.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, testkit.NewFakeService().FailWith(tt.err), Config{AdminToken: token})
			r := do(t, srv, tt.method, tt.path, "", bearer...)
			wantError(t, r, tt.status, tt.code, "")
		})
	}
}
