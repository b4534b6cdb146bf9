package chaos

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeUpgradeCluster is n nodes' HTTP surface as a rolling upgrade sees
// it: /readyz, GET /api/v1/cluster with a cluster_version, and the
// finalize route answering finalize (status and body).
type fakeUpgradeCluster struct {
	mu       sync.Mutex
	version  int // 0: no cluster_version field (an old binary)
	finalize func() (int, string)
	urls     []string
	replaced []string
}

func newFakeUpgradeCluster(t *testing.T, n int, finalize func() (int, string)) *fakeUpgradeCluster {
	f := &fakeUpgradeCluster{finalize: finalize}
	for i := range n {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			defer f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case "/readyz":
				fmt.Fprint(w, `{"data":{"ready":true}}`)
			case "/api/v1/cluster":
				state := "follower"
				if i == 1 {
					state = "leader"
				}
				v := ""
				if f.version > 0 {
					v = fmt.Sprintf(`,"cluster_version":%d`, f.version)
				}
				fmt.Fprintf(w, `{"data":{"node_id":"node%d","state":%q,"leader_id":"node2","term":3%s}}`, i+1, state, v)
			case FinalizePath:
				if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer tok" {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				status, body := f.finalize()
				if status == http.StatusOK {
					f.version++
				}
				w.WriteHeader(status)
				fmt.Fprint(w, body)
			default:
				w.WriteHeader(http.StatusNotFound)
			}
		}))
		t.Cleanup(srv.Close)
		f.urls = append(f.urls, srv.URL)
	}
	return f
}

// Replace implements Upgrader: the fake "starts" binary on node i; the
// new binary reports cluster_version 1.
func (f *fakeUpgradeCluster) Replace(_ context.Context, i int, binary string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replaced = append(f.replaced, fmt.Sprintf("%d:%s", i, binary))
	if binary == "new" && f.version == 0 {
		f.version = 1
	}
	return "restarea " + binary, nil
}

func (f *fakeUpgradeCluster) Version(binary string) (string, error) { return "restarea " + binary, nil }

// runFakeUpgrade runs plan's steps against a fake cluster of n nodes
// with a fast pace and returns the upgrader.
func runFakeUpgrade(t *testing.T, f *fakeUpgradeCluster, plan Upgrade) *upgrader {
	t.Helper()
	hc := newHTTPClient()
	hist := NewHistory()
	mon := newMonitor(hc, f.urls)
	r := &faultRunner{mon: mon, n: len(f.urls), hist: hist, log: testLogger(t)}
	pace := upgradePace{warmup: time.Millisecond, gap: time.Millisecond, final: time.Millisecond, finalize: 2 * time.Second, versions: 2 * time.Second}
	up := &upgrader{r: r, u: f, hc: hc, urls: f.urls, token: "tok", plan: plan, w: &workload{}, pace: pace}
	if err := up.versions(); err != nil {
		t.Fatal(err)
	}
	up.run(context.Background(), 0)
	return up
}

// Every node is replaced in index order, the first one taken back and
// up again, then the upgrade finalized: each step is recorded with the
// node's role and binary version, the cluster_version rose on every
// node, and the last round replays earlier posts.
func TestUpgradeSteps(t *testing.T) {
	f := newFakeUpgradeCluster(t, 3, func() (int, string) {
		return http.StatusOK, `{"data":{"changed":true,"from":1,"to":2,"status":{"cluster_version":2}}}`
	})
	up := runFakeUpgrade(t, f, Upgrade{From: "old", To: "new", Finalize: true, DowngradeOne: true})
	if up.err != nil {
		t.Fatal(up.err)
	}
	if want := []string{"0:new", "1:new", "2:new", "0:old", "0:new"}; !slices.Equal(f.replaced, want) {
		t.Errorf("replaced %v, want %v", f.replaced, want)
	}
	var got []string
	for _, s := range up.rep.Steps {
		got = append(got, fmt.Sprintf("%s %d %s %s", s.Step, s.Node, s.Role, s.Version))
		if s.Error != "" || s.EndNs < s.StartNs {
			t.Errorf("step %+v", s)
		}
	}
	want := []string{"upgrade 0 follower restarea new", "upgrade 1 leader restarea new", "upgrade 2 follower restarea new",
		"downgrade 0 follower restarea old", "reupgrade 0 follower restarea new", "finalize -1  2"}
	if !slices.Equal(got, want) {
		t.Errorf("steps\n %q\nwant\n %q", got, want)
	}
	if !slices.Equal(up.rep.ClusterVersionBefore, []string{"1", "1", "1"}) || !slices.Equal(up.rep.ClusterVersionAfter, []string{"2", "2", "2"}) {
		t.Errorf("cluster_version %v → %v", up.rep.ClusterVersionBefore, up.rep.ClusterVersionAfter)
	}
	if !up.w.replayEarlier.Load() || up.rep.FinalRoundNs == 0 {
		t.Error("no last round after the upgrade")
	}
	if kinds := up.r.done(); len(kinds) != 5 || kinds[1].Kind != "upgrade-leader" || kinds[3].Kind != "downgrade-follower" {
		t.Errorf("fault records %+v", kinds)
	}
}

// Before the finalize route exists, the upgrade fails saying so; a 409
// that lasts is reported with the members it names; the last round runs
// either way.
func TestUpgradeFinalizeRefused(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{http.StatusNotFound, `{"error":{"code":"not_found","message":"no such endpoint"}}`, "finalize: route not available"},
		{http.StatusConflict, `{"error":{"code":"conflict","message":"members behind: node3 (version 1)"}}`, "members behind: node3 (version 1)"},
		{http.StatusOK, `{"data":{"state":"leader"}}`, "answered 200 without status.cluster_version"},
	} {
		f := newFakeUpgradeCluster(t, 3, func() (int, string) { return tc.status, tc.body })
		up := runFakeUpgrade(t, f, Upgrade{From: "old", To: "new", Finalize: true})
		if up.err == nil || !strings.Contains(up.err.Error(), tc.want) {
			t.Errorf("finalize answered %d: error %v, want %q", tc.status, up.err, tc.want)
		}
		last := up.rep.Steps[len(up.rep.Steps)-1]
		if last.Step != StepFinalize || !strings.Contains(last.Error, tc.want) || !up.w.replayEarlier.Load() {
			t.Errorf("finalize answered %d: last step %+v", tc.status, last)
		}
		_, vs := up.report(context.Background(), nil)
		if len(vs) != 2 || vs[0].Kind != VUpgradeFailed || !strings.Contains(vs[0].Detail, tc.want) ||
			!strings.Contains(vs[1].Detail, "no post was acknowledged in the last round") {
			t.Errorf("finalize answered %d: violations %+v", tc.status, vs)
		}
	}
}

// A cluster_version rises when it is a larger number or dotted version,
// or appears where there was none.
func TestVersionRose(t *testing.T) {
	for _, tc := range []struct {
		before, after string
		want          bool
	}{
		{"1", "2", true}, {"2", "2", false}, {"2", "1", false}, {"", "1", true}, {"1", "", false},
		{"v0.1.0", "v0.2.0", true}, {"0.9", "0.10", true}, {"1.2", "1.2.0", false}, {"x", "y", false},
	} {
		if got := versionRose(tc.before, tc.after); got != tc.want {
			t.Errorf("versionRose(%q, %q) = %v", tc.before, tc.after, got)
		}
	}
	for raw, want := range map[string]string{`2`: "2", `"v0.2.0"`: "v0.2.0", `null`: "", ``: ""} {
		if got := versionText([]byte(raw)); got != want {
			t.Errorf("versionText(%s) = %q, want %q", raw, got, want)
		}
	}
}

// A step's write gap is measured within its window only.
func TestGapWithin(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	ops := []Op{
		{Kind: OpPost, ReturnNs: ms(50), Outcome: OutcomeCreated},
		{Kind: OpPost, ReturnNs: ms(120), Outcome: OutcomeCreated},
		{Kind: OpPost, ReturnNs: ms(150), Outcome: OutcomeFailed},
		{Kind: OpPost, ReturnNs: ms(400), Outcome: OutcomeReplayed},
		{Kind: OpRead, ReturnNs: ms(450), Outcome: OutcomeFound},
	}
	if got := gapWithin(ops, ms(100), ms(500)); got != 280*time.Millisecond {
		t.Errorf("gap %v, want 280ms", got)
	}
	if got := gapWithin(nil, ms(100), ms(500)); got != 400*time.Millisecond {
		t.Errorf("no posts: gap %v, want the whole window", got)
	}
}
