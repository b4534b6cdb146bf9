package kubernetes

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Where kubectl is installed, its built-in kustomize builds the base (with
// a secrets.env of test values, in a copy of the directory) and every
// document of the output decodes strictly; the StatefulSet and the backup
// CronJob must mount the generated Secret by its hashed name, and the Secret must carry the
// values byte for byte (no trailing newline in a token).
func TestKubectlKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("SKIP: kubectl is not on PATH; the strict decoding tests above cover the manifests")
	}
	dir := t.TempDir()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	values := map[string]string{"cluster-secret": randHex(24) + "+/=", "admin-token": randHex(20)}
	var env bytes.Buffer
	for _, k := range secretKeys {
		env.WriteString(k + "=" + values[k] + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.env"), env.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v: %s", err, stderr.Bytes())
	}

	var sts *appsv1.StatefulSet
	var cron *batchv1.CronJob
	var secret *corev1.Secret
	kinds := map[string]int{}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		kinds[tm.Kind]++
		switch tm.Kind {
		case "Secret":
			secret = &corev1.Secret{}
			if err := yaml.UnmarshalStrict(doc, secret); err != nil {
				t.Fatalf("built Secret: %v", err)
			}
		case "StatefulSet":
			sts = &appsv1.StatefulSet{}
			if err := yaml.UnmarshalStrict(doc, sts); err != nil {
				t.Fatalf("built StatefulSet: %v", err)
			}
		case "CronJob":
			cron = &batchv1.CronJob{}
			if err := yaml.UnmarshalStrict(doc, cron); err != nil {
				t.Fatalf("built CronJob: %v", err)
			}
		default:
			var b base
			if err := b.add(doc); err != nil {
				t.Fatalf("built %s: %v", tm.Kind, err)
			}
		}
	}
	want := map[string]int{"Secret": 1, "StatefulSet": 1, "Service": 2, "PodDisruptionBudget": 1, "NetworkPolicy": 1,
		"CronJob": 1, "PersistentVolumeClaim": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("the build has %d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if sts == nil || secret == nil || cron == nil {
		t.Fatal("the build lacks the StatefulSet, the CronJob or the Secret")
	}
	for k, v := range values {
		if got := string(secret.Data[k]); got != v {
			t.Errorf("secret key %s = %q, want %q", k, got, v)
		}
	}
	for what, spec := range map[string]corev1.PodSpec{"StatefulSet": sts.Spec.Template.Spec, "CronJob": cron.Spec.JobTemplate.Spec.Template.Spec} {
		refs := 0
		for _, v := range spec.Volumes {
			if v.Secret != nil {
				refs++
				if v.Secret.SecretName != secret.Name {
					t.Errorf("the %s's volume %s mounts secret %q; the build generated %q", what, v.Name, v.Secret.SecretName, secret.Name)
				}
			}
		}
		if refs != 1 {
			t.Errorf("the %s has %d Secret volumes, want 1", what, refs)
		}
	}
	t.Logf("kubectl kustomize: %v, secret %s", kinds, secret.Name)
}
