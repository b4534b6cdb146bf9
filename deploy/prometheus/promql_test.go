package prometheus

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestMetricNames(t *testing.T) {
	cases := []struct {
		expr string
		want []string
	}{
		{`up{job="restarea"} == 0`, []string{"up"}},
		{`sum by (job, outcome) (rate(restarea_posts_total{job="restarea"}[5m]))`, []string{"restarea_posts_total"}},
		{"max by (job) (a_index{job=\"x\"})\n  - on (job) group_right b_index{job=\"x\"} > 1000", []string{"a_index", "b_index"}},
		{`histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`, []string{"x_seconds_bucket"}},
		{`predict_linear(free_bytes[6h], 24 * 3600) < 0 or abs(skew) > 1e3`, []string{"free_bytes", "skew"}},
		{`a and on (instance) b == 1 unless ignoring (x) c offset 5m`, []string{"a", "b", "c"}},
		{`job:restarea_posts:rate5m{outcome="a{b}"} / ${datasource_x} > bool 0.5`, []string{"job:restarea_posts:rate5m"}},
		{`count_values("version", build_info) > scalar(max(y))`, []string{"build_info", "y"}},
		{`rate(x[5m:1m]) + x[1h] offset 1d`, []string{"x"}},
	}
	for _, tc := range cases {
		got, err := metricNames(tc.expr)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`x{a="b"`, `rate(x[5m)`, `x{a="b}`} {
		if got, err := metricNames(bad); err == nil {
			t.Errorf("metricNames(%q) = %q, want an error", bad, got)
		}
	}
}

func TestReadRules(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "r.yml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rules, err := readRules(write(`groups:
  - name: g
    rules:
      - record: a:b
        expr: sum(x)
      - alert: A
        expr: |
          y
            > 1

        for: 1m
`))
	if err != nil || len(rules) != 2 || rules[0].expr != "sum(x)" || rules[1].expr != "y\n> 1" || rules[1].name != "A" {
		t.Fatalf("rules %+v, %v", rules, err)
	}
	for _, bad := range []string{
		"      - alert: A\n        expr: \"x\"\n",
		"      - alert: A\n        expr: >\n          x\n",
		"      - alert: A\n        for: 1m\n",
		"        expr: x\n",
	} {
		if rules, err := readRules(write(bad)); err == nil {
			t.Errorf("%q: %+v, want an error", bad, rules)
		}
	}
}
