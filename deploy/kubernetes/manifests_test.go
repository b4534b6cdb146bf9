package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization this base uses.
// It is decoded strictly too: a field outside it (a typo, or a feature
// the tests do not know) fails the test rather than being ignored.
type kustomization struct {
	APIVersion      string            `json:"apiVersion"`
	Kind            string            `json:"kind"`
	Resources       []string          `json:"resources"`
	SecretGenerator []secretGenerator `json:"secretGenerator"`
}

type secretGenerator struct {
	Name string   `json:"name"`
	Envs []string `json:"envs"`
}

// secretKeys are the keys the README and kustomization.yaml tell the user
// to write into secrets.env.
var secretKeys = []string{"cluster-secret", "admin-token"}

// base is the decoded kustomize base.
type base struct {
	kust      kustomization
	sts       *appsv1.StatefulSet
	peers     *corev1.Service // headless, the StatefulSet's serviceName
	client    *corev1.Service
	pdb       *policyv1.PodDisruptionBudget
	netpol    *networkingv1.NetworkPolicy
	backup    *batchv1.CronJob
	backupPVC *corev1.PersistentVolumeClaim // where backup keeps its files
	container *corev1.Container             // the StatefulSet's only container
}

// loadBase reads kustomization.yaml and every resource it names, each
// decoded strictly into its Kubernetes API type.
func loadBase(t *testing.T) *base {
	t.Helper()
	var b base
	raw, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &b.kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	for _, res := range b.kust.Resources {
		docs, err := splitYAML(res)
		if err != nil {
			t.Fatalf("resource %s named by kustomization.yaml: %v", res, err)
		}
		for i, doc := range docs {
			if err := b.add(doc); err != nil {
				t.Fatalf("%s, document %d: %v", res, i+1, err)
			}
		}
	}
	if b.sts == nil {
		t.Fatal("the kustomization names no StatefulSet")
	}
	if n := len(b.sts.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the StatefulSet's pod has %d containers, want 1", n)
	}
	b.container = &b.sts.Spec.Template.Spec.Containers[0]
	return &b
}

// splitYAML returns the non-empty documents of a YAML file.
func splitYAML(path string) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	for _, d := range bytes.Split(raw, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no YAML document")
	}
	return docs, nil
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// add decodes doc strictly into the type its apiVersion and kind name.
func (b *base) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	strict := func(into any) error { return yaml.UnmarshalStrict(doc, into) }
	switch gvk := tm.APIVersion + " " + tm.Kind; gvk {
	case "apps/v1 StatefulSet":
		if b.sts != nil {
			return fmt.Errorf("a second StatefulSet")
		}
		b.sts = &appsv1.StatefulSet{}
		return strict(b.sts)
	case "v1 Service":
		s := &corev1.Service{}
		if err := strict(s); err != nil {
			return err
		}
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			if b.peers != nil {
				return fmt.Errorf("a second headless Service")
			}
			b.peers = s
		} else {
			if b.client != nil {
				return fmt.Errorf("a second client Service")
			}
			b.client = s
		}
		return nil
	case "policy/v1 PodDisruptionBudget":
		b.pdb = &policyv1.PodDisruptionBudget{}
		return strict(b.pdb)
	case "networking.k8s.io/v1 NetworkPolicy":
		b.netpol = &networkingv1.NetworkPolicy{}
		return strict(b.netpol)
	case "batch/v1 CronJob":
		if b.backup != nil {
			return fmt.Errorf("a second CronJob")
		}
		b.backup = &batchv1.CronJob{}
		return strict(b.backup)
	case "v1 PersistentVolumeClaim":
		if b.backupPVC != nil {
			return fmt.Errorf("a second PersistentVolumeClaim")
		}
		b.backupPVC = &corev1.PersistentVolumeClaim{}
		return strict(b.backupPVC)
	default:
		return fmt.Errorf("unexpected resource %q", gvk)
	}
}

// arg returns the value of --name=value in args ("" and false if absent).
func arg(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestKustomizationNamesEveryManifest(t *testing.T) {
	b := loadBase(t)
	if b.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || b.kust.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: apiVersion %q kind %q", b.kust.APIVersion, b.kust.Kind)
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f != "kustomization.yaml" && !slices.Contains(b.kust.Resources, f) {
			t.Errorf("%s is not named in kustomization.yaml's resources", f)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(b.kust.Resources)))) != len(b.kust.Resources) {
		t.Errorf("kustomization.yaml names a resource twice: %v", b.kust.Resources)
	}
	for name, ok := range map[string]bool{"headless peers Service": b.peers != nil, "client Service": b.client != nil,
		"PodDisruptionBudget": b.pdb != nil, "NetworkPolicy": b.netpol != nil,
		"backup CronJob": b.backup != nil, "backup PersistentVolumeClaim": b.backupPVC != nil} {
		if !ok {
			t.Errorf("no %s among the resources", name)
		}
	}
	// The Secret is generated from a file the user writes and git ignores:
	// no real value is ever committed.
	if len(b.kust.SecretGenerator) != 1 || len(b.kust.SecretGenerator[0].Envs) != 1 {
		t.Fatalf("want one secretGenerator reading one env file, got %+v", b.kust.SecretGenerator)
	}
	env := b.kust.SecretGenerator[0].Envs[0]
	ignore, err := os.ReadFile(".gitignore")
	if err != nil || !slices.Contains(strings.Fields(string(ignore)), env) {
		t.Errorf(".gitignore here must list %s (the secrets the user writes): %v", env, err)
	}
	kustText, _ := os.ReadFile("kustomization.yaml")
	for _, k := range secretKeys {
		if !strings.Contains(string(kustText), k+"=") {
			t.Errorf("kustomization.yaml's instructions do not show how to write %s into %s", k, env)
		}
	}
}

func TestStatefulSet(t *testing.T) {
	b := loadBase(t)
	s, c := b.sts, b.container
	spec := s.Spec.Template.Spec
	if s.Name != "restarea" || s.Spec.Replicas == nil || *s.Spec.Replicas != 3 {
		t.Errorf("StatefulSet %q replicas %v, want restarea with 3", s.Name, s.Spec.Replicas)
	}
	if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q, want Parallel", s.Spec.PodManagementPolicy)
	}
	if b.peers == nil || s.Spec.ServiceName != b.peers.Name {
		t.Fatalf("serviceName %q is not the headless Service", s.Spec.ServiceName)
	}
	if !b.peers.Spec.PublishNotReadyAddresses {
		t.Error("the headless Service must publish not-ready addresses: peers resolve each other before any is ready")
	}
	labels := s.Spec.Template.Labels
	sel, err := metav1.LabelSelectorAsMap(s.Spec.Selector)
	if err != nil || !subset(sel, labels) {
		t.Errorf("selector %v does not match the pod labels %v (%v)", sel, labels, err)
	}
	for what, sel := range map[string]map[string]string{"peers Service": b.peers.Spec.Selector, "client Service": b.client.Spec.Selector} {
		if len(sel) == 0 || !subset(sel, labels) {
			t.Errorf("%s selector %v does not match the pod labels %v", what, sel, labels)
		}
	}
	if b.pdb.Spec.MaxUnavailable == nil || b.pdb.Spec.MaxUnavailable.IntValue() != 1 || b.pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: want maxUnavailable 1 only, got %+v", b.pdb.Spec)
	}
	if pdbSel, err := metav1.LabelSelectorAsMap(b.pdb.Spec.Selector); err != nil || len(pdbSel) == 0 || !subset(pdbSel, labels) {
		t.Errorf("PodDisruptionBudget selector %v does not match the pod labels %v", pdbSel, labels)
	}
	if np, err := metav1.LabelSelectorAsMap(&b.netpol.Spec.PodSelector); err != nil || len(np) == 0 || !subset(np, labels) {
		t.Errorf("NetworkPolicy podSelector %v does not match the pod labels %v", np, labels)
	}

	// Non-root, read-only root filesystem, as the FROM scratch image runs.
	psc, csc := spec.SecurityContext, c.SecurityContext
	if psc == nil || csc == nil {
		t.Fatal("pod and container security contexts are required")
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext must run as a non-root uid: %+v", psc)
	}
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		t.Error("the container's root filesystem must be read-only")
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks must be false: service links inject RESTAREA_* variables, the node's flag namespace")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}

	// Probes.
	probe := func(what string, p *corev1.Probe, path string) {
		t.Helper()
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: want an HTTP GET probe of %s", what, path)
			return
		}
		if p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probes %s on port %s, want %s on http", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
		}
	}
	probe("readinessProbe", c.ReadinessProbe, "/readyz")
	probe("livenessProbe", c.LivenessProbe, "/healthz")
	probe("startupProbe", c.StartupProbe, "/healthz")
	if p := c.StartupProbe; p != nil && p.PeriodSeconds*p.FailureThreshold < 60 {
		t.Errorf("startupProbe allows %ds; a node rebuilding its state needs longer", p.PeriodSeconds*p.FailureThreshold)
	}
	// A graceful stop: hand-over (5 s) + HTTP drain (5 s) + raft and
	// stores, with room.
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 20 {
		t.Errorf("terminationGracePeriodSeconds %v: a leader needs about 10 s to hand over and drain", g)
	}

	// Ports: the args bind what the container and the Services declare.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] == 0 || ports["raft"] == 0 {
		t.Fatalf("container ports %v: want http and raft", c.Ports)
	}
	if v, _ := arg(c.Args, "http-addr"); v != fmt.Sprintf("0.0.0.0:%d", ports["http"]) {
		t.Errorf("--http-addr=%s, container port http is %d", v, ports["http"])
	}
	if v, _ := arg(c.Args, "raft-addr"); v != fmt.Sprintf("0.0.0.0:%d", ports["raft"]) {
		t.Errorf("--raft-addr=%s, container port raft is %d", v, ports["raft"])
	}
	for _, svc := range []*corev1.Service{b.peers, b.client} {
		for _, p := range svc.Spec.Ports {
			if _, ok := ports[p.TargetPort.String()]; !ok {
				t.Errorf("Service %s port %s targets %q, not a container port", svc.Name, p.Name, p.TargetPort.String())
			}
		}
	}

	// Data: --data-dir is the volume of the PVC template.
	if len(s.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("want one volumeClaimTemplate, got %d", len(s.Spec.VolumeClaimTemplates))
	}
	claim := s.Spec.VolumeClaimTemplates[0]
	if q := claim.Spec.Resources.Requests[corev1.ResourceStorage]; q.IsZero() {
		t.Error("the volumeClaimTemplate requests no storage")
	}
	dataDir, _ := arg(c.Args, "data-dir")
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.Name == claim.Name && m.MountPath == dataDir && !m.ReadOnly)
	}
	if !mounted {
		t.Errorf("--data-dir=%s is not the writable mount of volume %s: %+v", dataDir, claim.Name, c.VolumeMounts)
	}

	// Identity: node id = pod name; advertised addresses = the pod's
	// stable DNS name; --join lists the first replicas' names.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME must come from metadata.name: %+v", e)
	}
	if e := env["POD_NAMESPACE"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE must come from metadata.namespace: %+v", e)
	}
	dns := func(pod string) string {
		return pod + "." + s.Spec.ServiceName + ".$(POD_NAMESPACE).svc.cluster.local"
	}
	want := map[string]string{
		"node-id":          "$(POD_NAME)",
		"raft-advertise":   fmt.Sprintf("%s:%d", dns("$(POD_NAME)"), ports["raft"]),
		"advertise-url":    fmt.Sprintf("http://%s:%d", dns("$(POD_NAME)"), ports["http"]),
		"bootstrap-expect": "3",
	}
	var join []string
	for i := range 3 {
		join = append(join, fmt.Sprintf("http://%s:%d", dns(fmt.Sprintf("%s-%d", s.Name, i)), ports["http"]))
	}
	want["join"] = strings.Join(join, ",")
	for name, w := range want {
		if v, ok := arg(c.Args, name); v != w {
			t.Errorf("--%s=%q (given: %v), want %q", name, v, ok, w)
		}
	}

	// Secrets are files of the generated Secret, on a read-only mount;
	// none is an environment variable.
	gen := b.kust.SecretGenerator[0].Name
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("env %s comes from a Secret; mount it as a file instead", e.Name)
		}
	}
	dir := secretMount(t, "the StatefulSet", spec, c, gen)
	for name, key := range map[string]string{"RESTAREA_CLUSTER_SECRET_FILE": "cluster-secret", "RESTAREA_ADMIN_TOKEN_FILE": "admin-token"} {
		if v := env[name].Value; v != dir+"/"+key {
			t.Errorf("%s=%q, want %s/%s, the Secret's key %s", name, v, dir, key, key)
		}
	}

	// Spread: over zones where there are several (never blocking a
	// single-zone cluster), and over machines.
	spread := map[string]corev1.UnsatisfiableConstraintAction{}
	for _, tc := range spec.TopologySpreadConstraints {
		spread[tc.TopologyKey] = tc.WhenUnsatisfiable
		if sel, err := metav1.LabelSelectorAsMap(tc.LabelSelector); err != nil || len(sel) == 0 || !subset(sel, labels) || tc.MaxSkew != 1 {
			t.Errorf("topologySpreadConstraint on %s: maxSkew %d, selector %v does not match the pod labels %v", tc.TopologyKey, tc.MaxSkew, sel, labels)
		}
	}
	if spread["topology.kubernetes.io/zone"] != corev1.ScheduleAnyway {
		t.Errorf("want a zone spread with whenUnsatisfiable ScheduleAnyway: %v", spread)
	}
	if _, ok := spread["kubernetes.io/hostname"]; !ok {
		t.Errorf("want a spread over kubernetes.io/hostname: %v", spread)
	}
	if e, ok := env["RESTAREA_PUBLIC_URL"]; !ok || e.Value == "" {
		t.Error("RESTAREA_PUBLIC_URL must be set: entry urls must be the same on every node")
	}
}

// secretMount checks that container c of pod spec mounts, read-only, a
// volume of the generated Secret gen with no optional keys, and returns
// the mount's path.
func secretMount(t *testing.T, what string, spec corev1.PodSpec, c *corev1.Container, gen string) string {
	t.Helper()
	for _, v := range spec.Volumes {
		if v.Secret == nil || v.Secret.SecretName != gen {
			continue
		}
		if v.Secret.Optional != nil && *v.Secret.Optional {
			t.Errorf("%s: the Secret volume %s must not be optional", what, v.Name)
		}
		if m := v.Secret.DefaultMode; m == nil || *m&0o007 != 0 {
			t.Errorf("%s: the Secret volume %s must not be readable by others (defaultMode 0440)", what, v.Name)
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				if !m.ReadOnly {
					t.Errorf("%s: the Secret volume %s is mounted writable", what, v.Name)
				}
				return m.MountPath
			}
		}
	}
	t.Fatalf("%s: no read-only mount of a volume from the Secret %s", what, gen)
	return ""
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
