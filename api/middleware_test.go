package api

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/testkit"
)

func TestMethodNotAllowed(t *testing.T) {
	tests := []struct {
		method string
		path   string
		allow  string
	}{
		{http.MethodGet, "/api/v1/entries", "POST"},
		{http.MethodPut, "/api/v1/entries", "POST"},
		{http.MethodDelete, "/api/v1/threads", "GET, HEAD"},
		{http.MethodPost, "/api/v1/threads/" + entryID, "GET, HEAD"},
		{http.MethodPatch, "/api/v1/threads/" + entryID + "/replies", "GET, HEAD"},
		{http.MethodPost, "/api/v1/replies/" + entryID, "GET, HEAD"},
		{http.MethodPost, "/healthz", "GET, HEAD"},
		{http.MethodDelete, "/readyz", "GET, HEAD"},
		{http.MethodOptions, "/api/v1/threads", "GET, HEAD"},
		{http.MethodGet, "/api/v1/admin/entries/" + entryID + "/hide", "POST"},
		{http.MethodDelete, "/api/v1/admin/entries/" + entryID + "/delete", "POST"},
		{http.MethodDelete, "/api/v1/admin/entries", "GET, HEAD, POST"},
		{http.MethodPost, "/api/v1/admin/settings", "GET, HEAD, PUT"},
	}
	f := testkit.NewFakeService()
	srv := serve(t, f, Config{AdminToken: token})
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := do(t, srv, tt.method, tt.path, "", bearer...)
			wantError(t, r, http.StatusMethodNotAllowed, restarea.CodeMethodNotAllowed, tt.method)
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
	if n, _ := f.Last(); n != 0 {
		t.Fatal("a wrong method reached the service")
	}
}

func TestNotFound(t *testing.T) {
	paths := []string{
		"/api/",
		"/api/v1",
		"/api/v1/",
		"/api/v2/entries",
		"/api/v1/entries/" + entryID,
		"/api/v1/threads/",
		"/api/v1/threads/" + entryID + "/replies/" + entryID,
		"/api/v1/replies",
		"/healthz/x",
		"/nothing",
	}
	srv := serve(t, testkit.NewFakeService(), Config{})
	for _, p := range paths {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			t.Run(m+" "+p, func(t *testing.T) {
				wantError(t, do(t, srv, m, p, ""), http.StatusNotFound, restarea.CodeNotFound, "no such endpoint")
			})
		}
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		ready  func() error
		status int
		raw    string
	}{
		{"healthz", "/healthz", nil, 200, `{"data":{"status":"ok"}}`},
		{"healthz while not ready", "/healthz", func() error { return errors.New("no leader") }, 200, `{"data":{"status":"ok"}}`},
		{"readyz without a check", "/readyz", nil, 200, `{"data":{"ready":true}}`},
		{"readyz ready", "/readyz", func() error { return nil }, 200, `{"data":{"ready":true}}`},
		{"readyz not ready", "/readyz", func() error { return errors.New("no leader known") }, 503,
			`{"error":{"code":"unavailable","message":"not ready: no leader known"}}`},
		{"readyz/read ready", "/readyz/read", func() error { return nil }, 200, `{"data":{"ready":true}}`},
		{"readyz coded reason", "/readyz", func() error { return restarea.Errorf(restarea.CodeUnavailable, "catching up") }, 503,
			`{"error":{"code":"unavailable","message":"not ready: catching up"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, testkit.NewFakeService(), Config{Ready: tt.ready, ReadyForReads: tt.ready})
			r := do(t, srv, http.MethodGet, tt.path, "")
			if r.status != tt.status || strings.TrimSpace(r.raw) != tt.raw {
				t.Fatalf("got %d %s, want %d %s", r.status, r.raw, tt.status, tt.raw)
			}
			if tt.status == 503 && r.header.Get("Retry-After") != "1" {
				t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
			}
			h := do(t, srv, http.MethodHead, tt.path, "")
			if h.status != tt.status || h.raw != "" {
				t.Fatalf("HEAD: %d %q", h.status, h.raw)
			}
		})
	}
}

func TestPanicBecomes500(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		body   string
	}{
		{"post", http.MethodPost, "/api/v1/entries", question("t")},
		{"list", http.MethodGet, "/api/v1/threads", ""},
		{"admin", http.MethodGet, "/api/v1/admin/settings", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, testkit.NewFakeService().PanicWith("boom"), Config{AdminToken: token})
			r := do(t, srv, tt.method, tt.path, tt.body, bearer...)
			wantError(t, r, http.StatusInternalServerError, restarea.CodeInternal, "internal error")
			if strings.Contains(r.raw, "boom") {
				t.Fatal("the panic value leaked")
			}
			// The server lives on.
			if h := do(t, srv, http.MethodGet, "/healthz", ""); h.status != http.StatusOK {
				t.Fatalf("after the panic: %d", h.status)
			}
		})
	}
}

func TestRequestLog(t *testing.T) {
	const secret = "a-secret-body-marker"
	tests := []struct {
		name    string
		fake    *testkit.FakeService
		method  string
		path    string
		body    string
		level   string
		status  string
		mention string
	}{
		{"2xx at debug", testkit.NewFakeService(), http.MethodPost, "/api/v1/entries", question(secret), "level=DEBUG", "status=201", ""},
		// At Debug every refusal is logged, at Debug (TestRefusalLogSampled:
		// at Info they are sampled).
		{"4xx at debug", testkit.NewFakeService(), http.MethodPost, "/api/v1/entries", `{"body":"` + secret, "level=DEBUG", "status=400", ""},
		{"401 at debug", testkit.NewFakeService(), http.MethodGet, "/api/v1/admin/settings", "", "level=DEBUG", "status=401", ""},
		{"5xx at error", testkit.NewFakeService().FailWith(errors.New("disk gone")), http.MethodGet, "/api/v1/threads?cursor=" + secret, "", "level=ERROR", "status=500", "disk gone"},
		{"panic logged", testkit.NewFakeService().PanicWith("boom"), http.MethodGet, "/api/v1/threads", "", "level=ERROR", "status=500", "panic=boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs testkit.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			h := New(Config{Service: tt.fake, Admin: tt.fake, AdminToken: token, Logger: logger})
			// ServeHTTP directly: the log line is complete when it returns.
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer wrong-"+token)
			req.RemoteAddr = "192.0.2.1:4000"
			h.ServeHTTP(httptest.NewRecorder(), req)
			out := logs.String()
			line := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
			for _, want := range []string{tt.level, tt.status, "method=" + tt.method, "path=" + strings.SplitN(tt.path, "?", 2)[0], "source=192.0.2.1", "duration="} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %q lacks %q", line, want)
				}
			}
			if tt.mention != "" && !strings.Contains(out, tt.mention) {
				t.Errorf("logs lack %q: %s", tt.mention, out)
			}
			if strings.Contains(out, secret) || strings.Contains(out, token) {
				t.Errorf("logs hold a body, query or token: %s", out)
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Building twice on one registry shares the series rather than panicking.
	New(Config{Service: testkit.NewFakeService(), Logger: discard, Registerer: reg})
	f := testkit.NewFakeService()
	f.Add(restarea.Entry{ID: entryID, Type: restarea.TypeQuestion, Title: "t", Body: "b", Visible: true})
	srv := serveExact(t, Config{Service: f, Logger: discard, Registerer: reg})
	requests := []struct{ method, path string }{
		{http.MethodGet, "/api/v1/threads"},
		{http.MethodGet, "/api/v1/threads?limit=2"},
		{http.MethodGet, "/api/v1/threads/" + entryID},
		{http.MethodGet, "/api/v1/threads/bad"},
		{http.MethodGet, "/no/such/" + entryID},
	}
	for _, q := range requests {
		do(t, srv, q.method, q.path, "")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	histograms := map[string]uint64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "restarea_http_requests_total":
				counts[labels["route"]+" "+labels["code"]] = m.GetCounter().GetValue()
			case "restarea_http_request_duration_seconds":
				histograms[labels["route"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	wantCounts := map[string]float64{
		"/api/v1/threads 200":      2,
		"/api/v1/threads/{id} 200": 1,
		"/api/v1/threads/{id} 400": 1,
		"unmatched 404":            1,
	}
	for k, v := range wantCounts {
		if counts[k] != v {
			t.Errorf("requests_total{%s} = %v, want %v (all: %v)", k, counts[k], v, counts)
		}
	}
	if len(counts) != len(wantCounts) {
		t.Errorf("unexpected series: %v", counts)
	}
	if histograms["/api/v1/threads"] != 2 || histograms["/api/v1/threads/{id}"] != 2 {
		t.Errorf("duration samples: %v", histograms)
	}
}

func TestNewRequiresService(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New without a Service did not panic")
		}
	}()
	New(Config{})
}

// A flood of bad requests used to write one info line each: the log grew
// as fast as the attacker sent. At Info, refusals are sampled (a burst of
// httpx.DefaultLogLinesPerSecond), and the metrics still count them all.
func TestRefusalLogSampled(t *testing.T) {
	var logs testkit.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	reg := prometheus.NewRegistry()
	h := New(Config{Service: testkit.NewFakeService(), Logger: logger, Registerer: reg})
	const flood = 500
	for range flood {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/entries", strings.NewReader("{"))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	lines := strings.Count(logs.String(), "status=400")
	if lines < 1 || lines > 2*httpx.DefaultLogLinesPerSecond {
		t.Fatalf("%d log lines for %d refusals", lines, flood)
	}
	mfs, _ := reg.Gather()
	counted := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "restarea_http_requests_total" {
			for _, m := range mf.GetMetric() {
				counted += m.GetCounter().GetValue()
			}
		}
	}
	if counted != flood {
		t.Fatalf("metrics counted %v of %d requests", counted, flood)
	}
}
