package raftmetrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/restarea/restarea/internal/testkit"
)

// Every rename's new name follows Prometheus' conventions, each old name
// is renamed once, and the deprecation says what replaces it.
func TestRenamesFollowConventions(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range renames {
		if seen[r.Old] {
			t.Errorf("%s renamed twice", r.Old)
		}
		seen[r.Old] = true
		if !strings.HasPrefix(r.Old, "raft_") {
			t.Errorf("%s: not one of raft's names", r.Old)
		}
		if r.Existing {
			if !strings.HasPrefix(r.New, "restarea_") || r.Help != "" {
				t.Errorf("%s: an existing series is a restarea_ one, described where it is exported", r.Old)
			}
			continue
		}
		typ := "summary"
		if strings.HasSuffix(r.New, "_total") {
			typ = "counter"
		}
		if err := testkit.MetricConventions(r.New, testkit.MetricFamily{Help: r.Help, Type: typ}); err != nil {
			t.Error(err)
		}
		if r.Unit == millis && !strings.HasSuffix(r.New, "_seconds") {
			t.Errorf("%s: a duration converted to seconds ends in _seconds", r.New)
		}
		if r.New != r.Old && !strings.HasPrefix(r.DeprecatedHelp(), "Deprecated: use "+r.New+"; removed in the release after next.") {
			t.Errorf("%s: deprecation %q", r.Old, r.DeprecatedHelp())
		}
	}
}

// What raft reports reaches a registry under both names, the new one in
// seconds; series the node already exports are not duplicated, and a key
// the table does not know passes through as the sink names it.
func TestCollectorConverts(t *testing.T) {
	c, err := Collector()
	if err != nil {
		t.Fatal(err)
	}
	gometrics.AddSample([]string{"raft", "leader", "lastContact"}, 250)
	gometrics.IncrCounterWithLabels([]string{"raft", "replication", "appendEntries", "logs"}, 3, []gometrics.Label{{Name: "peer_id", Value: "n2"}})
	gometrics.SetGauge([]string{"raft", "peers"}, 3)
	gometrics.AddSample([]string{"raft", "fsm", "applyBatch"}, 2)
	gometrics.IncrCounter([]string{"raft", "unknownKey"}, 1)

	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	page := rec.Body.String()
	for _, want := range []string{
		"raft_leader_last_contact_seconds_sum 0.25\n",
		"raft_leader_last_contact_seconds_count 1\n",
		"raft_leader_lastContact_sum 250\n",
		"# HELP raft_leader_lastContact Deprecated: use raft_leader_last_contact_seconds; removed in the release after next. In milliseconds.\n",
		"# TYPE raft_replication_append_entries_logs_total counter\n",
		`raft_replication_append_entries_logs_total{peer_id="n2"} 3` + "\n",
		`raft_replication_appendEntries_logs{peer_id="n2"} 3` + "\n",
		"# HELP raft_peers Servers (voters and non-voters) in the latest raft configuration.\n",
		"raft_peers 3\n",
		"# HELP raft_fsm_applyBatch Deprecated: use restarea_fsm_apply_seconds;",
		"raft_unknownKey 1\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("missing %q from\n%s", want, page)
		}
	}
	if strings.Contains(page, "restarea_fsm_apply_seconds") && !strings.Contains(page, "use restarea_fsm_apply_seconds") {
		t.Errorf("restarea_fsm_apply_seconds is the node's, not raft's:\n%s", page)
	}
	if n := strings.Count(page, "# TYPE raft_peers "); n != 1 {
		t.Errorf("raft_peers: %d families", n)
	}
}
