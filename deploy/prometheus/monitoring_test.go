package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

const (
	rulesFile     = "restarea.rules.yml"
	rulesTestFile = "restarea.rules.test.yml"
	dashboardFile = "restarea.dashboard.json"
)

// prometheusOwn are series Prometheus itself adds to every target.
var prometheusOwn = map[string]bool{"up": true}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	UID           string
	Templating    struct {
		List []struct {
			Name, Type string
			Query      any
		}
	}
	Panels []panel
}

type panel struct {
	ID         int
	Type       string
	Title      string
	Datasource *datasource
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string `json:"refId"`
		Expr       string
		Datasource *datasource
	}
	Panels []panel // a row's, when it is collapsed
}

type datasource struct{ Type, UID string }

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// queryPanels returns every panel with queries, rows' nested ones
// included.
func (d dashboard) queryPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// query is one PromQL expression of the pack and where it is.
type query struct{ where, expr string }

func packQueries(t *testing.T) (queries []query, recorded map[string]bool) {
	t.Helper()
	rules, err := readRules(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	recorded = map[string]bool{}
	for _, r := range rules {
		queries = append(queries, query{fmt.Sprintf("%s:%d (%s %s)", rulesFile, r.line, r.kind, r.name), r.expr})
		if r.kind == "record" {
			recorded[r.name] = true
		}
	}
	for _, p := range readDashboard(t).queryPanels() {
		for _, tg := range p.Targets {
			queries = append(queries, query{fmt.Sprintf("%s: panel %q, query %s", dashboardFile, p.Title, tg.RefID), tg.Expr})
		}
	}
	return queries, recorded
}

// TestDashboard: the dashboard parses, picks its Prometheus by the
// ${datasource} variable, and every panel has that datasource and at
// least one query.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.SchemaVersion < 39 || d.UID == "" {
		t.Errorf("schemaVersion %d, uid %q: want 39 or later and a uid", d.SchemaVersion, d.UID)
	}
	var hasVar bool
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasVar = true
		}
	}
	if !hasVar {
		t.Error(`no templating variable "datasource" of type datasource, query prometheus`)
	}
	isVar := func(ds *datasource) bool { return ds != nil && ds.Type == "prometheus" && ds.UID == "${datasource}" }
	ids := map[int]bool{}
	panels := d.queryPanels()
	if len(panels) < 10 {
		t.Errorf("%d panels with queries", len(panels))
	}
	for _, p := range panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d %q: title or grid position %+v", p.ID, p.Title, p.GridPos)
		}
		if !isVar(p.Datasource) {
			t.Errorf("panel %q: datasource %+v, want {prometheus ${datasource}}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" || (tg.Datasource != nil && !isVar(tg.Datasource)) {
				t.Errorf("panel %q: query %+v", p.Title, tg)
			}
		}
	}
}

// TestAlertsDocumentedAndTested: docs/operating.md's alert table names
// exactly the alerts of the rules, and the promtool tests evaluate each.
func TestAlertsDocumentedAndTested(t *testing.T) {
	rules, err := readRules(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, r := range rules {
		if r.kind == "alert" {
			alerts = append(alerts, r.name)
		}
	}
	sort.Strings(alerts)
	grab := func(path string, re *regexp.Regexp) []string {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
		sort.Strings(names)
		return names
	}
	if doc := grab(filepath.Join("..", "..", "docs", "operating.md"), regexp.MustCompile("(?m)^\\| `(Restarea[A-Za-z]+)` \\|")); !slices.Equal(doc, alerts) {
		t.Errorf("docs/operating.md's alert table names %v;\n%s has %v", doc, rulesFile, alerts)
	}
	if tested := grab(rulesTestFile, regexp.MustCompile(`(?m)^\s*alertname: (\S+)`)); !slices.Equal(tested, alerts) {
		t.Errorf("%s tests %v;\n%s has %v", rulesTestFile, tested, rulesFile, alerts)
	}
}

// TestMetricsExported: every metric the rules and the dashboard query is
// on a real node's /metrics. A three-node cluster in process takes posts,
// reads and a search through REST first: labelled families appear once
// used, and raft's per-follower series only on a leader with followers.
func TestMetricsExported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	queries, recorded := packQueries(t)
	want := map[string][]string{} // metric name → where it is used
	for _, q := range queries {
		names, err := metricNames(q.expr)
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", q.where, q.expr)
		}
		for _, n := range names {
			switch {
			case prometheusOwn[n]:
			case strings.Contains(n, ":"):
				if !recorded[n] {
					t.Errorf("%s: %s is not recorded by %s", q.where, n, rulesFile)
				}
			default:
				want[n] = append(want[n], q.where)
			}
		}
	}

	// The bound on expensive requests is on by default, and its gauge with
	// it; test nodes turn it off unless asked.
	nodes := testnode.StartCluster(t, 3, testnode.WithConfig(func(c *server.Config) {
		c.MaxExpensive, c.MaxExpensivePerSource = 0, 0
	}))
	leader := testnode.Leader(t, nodes)
	r, q, _ := testkit.PostEntry(t, leader.URL(), testkit.Question("Which metrics are there?"))
	if r.Status != http.StatusCreated {
		t.Fatalf("post: %d %s", r.Status, r.Body)
	}
	if r, _, _ := testkit.PostEntry(t, nodes[1].URL(), testkit.Reply(q.ID, "These.")); r.Status != http.StatusCreated {
		t.Fatalf("reply: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/api/v1/threads/" + q.ID, "/api/v1/threads?limit=1", "/api/v1/search?q=metrics"} {
		if r := testkit.Get(t, leader.URL()+path); r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}

	var missing []string
	err := testkit.Poll(context.Background(), 60*time.Second, func() error {
		exported := map[string]bool{}
		for _, n := range nodes {
			if err := scrape(n.URL(), exported); err != nil {
				return err
			}
		}
		missing = missing[:0]
		for name := range want {
			if !exported[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not exported: %v", missing)
		}
		return nil
	})
	if err != nil {
		sort.Strings(missing)
		for _, name := range missing {
			t.Errorf("%s is not on any node's /metrics; used by:\n\t%s", name, strings.Join(want[name], "\n\t"))
		}
		t.Fatalf("waited 60s for the metrics: %v", err)
	}
}

// scrape adds to exported the sample names of base's /metrics, and the
// histogram and summary families by their _bucket, _sum and _count
// series too.
func scrape(base string, exported map[string]bool) error {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/metrics: %d", base, resp.StatusCode)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f, ok := strings.CutPrefix(l, "# TYPE "); ok {
			fields := strings.Fields(f)
			if len(fields) == 2 && (fields[1] == "histogram" || fields[1] == "summary") {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					exported[fields[0]+s] = true
				}
			}
			if len(fields) > 0 {
				exported[fields[0]] = true
			}
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			exported[l[:i]] = true
		}
	}
	return nil
}

// TestPromtool: promtool accepts the rules, passes their unit tests, and
// parses every query of the dashboard (each as a recording rule, with the
// dashboard's variables given values).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus); .ci/run installs it")
	}
	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, promtool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", rulesFile)
	run("test", "rules", rulesTestFile)

	vars := strings.NewReplacer("$__rate_interval", "5m", "${job}", "restarea", "$job", "restarea", "${instance}", ".*", "$instance", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for _, p := range readDashboard(t).queryPanels() {
		for _, tg := range p.Targets {
			fmt.Fprintf(&b, "      - record: dashboard:panel_%d_%s\n        expr: |\n", p.ID, strings.ToLower(tg.RefID))
			for _, l := range strings.Split(vars.Replace(tg.Expr), "\n") {
				fmt.Fprintf(&b, "          %s\n", l)
			}
		}
	}
	if strings.Contains(b.String(), "$") {
		t.Fatalf("a dashboard query uses a variable this test does not know:\n%s", b.String())
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run("check", "rules", path)
}
