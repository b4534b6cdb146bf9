package kubernetes

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// monitoringDir is the optional kustomization with the Prometheus
// Operator's resources.
const monitoringDir = "monitoring"

// rulesFile is the Prometheus rules file the PrometheusRule copies.
const rulesFile = "../prometheus/restarea.rules.yml"

// The Prometheus Operator's kinds are not in k8s.io/api: these are the
// fields of monitoring.coreos.com/v1 the manifests use, decoded strictly
// like the rest, so a misspelt or misplaced field fails the test.
type serviceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string       `json:"port"`
			Path          string       `json:"path"`
			Scheme        string       `json:"scheme"`
			Interval      string       `json:"interval"`
			ScrapeTimeout string       `json:"scrapeTimeout"`
			Relabelings   []relabeling `json:"relabelings"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type relabeling struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	TargetLabel  string   `json:"targetLabel"`
	Replacement  *string  `json:"replacement,omitempty"`
}

type prometheusRule struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []struct {
		Record      string            `json:"record,omitempty"`
		Alert       string            `json:"alert,omitempty"`
		Expr        string            `json:"expr"`
		For         string            `json:"for,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"rules"`
}

// loadMonitoring decodes the monitoring kustomization and its two
// resources strictly.
func loadMonitoring(t *testing.T) (*serviceMonitor, *prometheusRule) {
	t.Helper()
	var k kustomization
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", monitoringDir, err)
	}
	files, _ := filepath.Glob(filepath.Join(monitoringDir, "*.yaml"))
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(k.Resources, base) {
			t.Errorf("%s is not named in %s/kustomization.yaml", f, monitoringDir)
		}
	}
	var sm *serviceMonitor
	var pr *prometheusRule
	for _, res := range k.Resources {
		docs, err := splitYAML(filepath.Join(monitoringDir, res))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range docs {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatal(err)
			}
			var into any
			switch gvk := tm.APIVersion + " " + tm.Kind; {
			case gvk == "monitoring.coreos.com/v1 ServiceMonitor" && sm == nil:
				sm = &serviceMonitor{}
				into = sm
			case gvk == "monitoring.coreos.com/v1 PrometheusRule" && pr == nil:
				pr = &prometheusRule{}
				into = pr
			default:
				t.Fatalf("%s, document %d: unexpected resource %q", res, i+1, gvk)
			}
			if err := yaml.UnmarshalStrict(doc, into); err != nil {
				t.Fatalf("%s, document %d: %v", res, i+1, err)
			}
		}
	}
	if sm == nil || pr == nil {
		t.Fatalf("%s: want a ServiceMonitor and a PrometheusRule", monitoringDir)
	}
	return sm, pr
}

// The ServiceMonitor scrapes /metrics on the http port of the headless
// peers Service (every pod, ready or not), once per node, as job
// "restarea" (the job the rules select) with the pod's name as instance.
func TestServiceMonitor(t *testing.T) {
	b := loadBase(t)
	sm, _ := loadMonitoring(t)
	sel, err := metav1.LabelSelectorAsMap(&sm.Spec.Selector)
	if err != nil || len(sel) == 0 || !subset(sel, b.peers.Labels) || subset(sel, b.client.Labels) {
		t.Errorf("the ServiceMonitor selects %v: want the peers Service %v only (scraping both would count every node twice)", sel, b.peers.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	e := sm.Spec.Endpoints[0]
	if !slices.ContainsFunc(b.peers.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) || e.Path != "/metrics" {
		t.Errorf("endpoint port %q path %q: want a port of the peers Service and /metrics", e.Port, e.Path)
	}
	job, instance := false, false
	for _, r := range e.Relabelings {
		job = job || (r.TargetLabel == "job" && r.Replacement != nil && *r.Replacement == "restarea" && len(r.SourceLabels) == 0)
		instance = instance || (r.TargetLabel == "instance" && slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_pod_name"}))
	}
	if !job || !instance {
		t.Errorf("relabelings %+v: want job=restarea and instance from the pod's name", e.Relabelings)
	}
}

// The PrometheusRule has the groups of the rules file, unchanged, where
// that file is in the tree; either way its alerts select job="restarea".
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	_, pr := loadMonitoring(t)
	alerts := 0
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts++
			}
			if (r.Alert == "") == (r.Record == "") || !strings.Contains(r.Expr, `job="restarea"`) {
				t.Errorf("rule %q%q: want exactly one of alert and record, and an expression selecting job=\"restarea\"", r.Alert, r.Record)
			}
		}
	}
	if alerts == 0 {
		t.Fatal("the PrometheusRule has no alert")
	}
	raw, err := os.ReadFile(rulesFile)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("SKIP: %s is not in this tree; the PrometheusRule's own checks passed", rulesFile)
	}
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []ruleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if !reflect.DeepEqual(file.Groups, pr.Spec.Groups) {
		t.Errorf("%s/prometheusrule.yaml's groups differ from %s: copy them again (indented under spec:)", monitoringDir, rulesFile)
	}
}
