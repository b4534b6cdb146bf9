package kubernetes

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// httpsOverlay is the part of kustomize's Kustomization the https
// overlay uses, decoded strictly.
type httpsOverlay struct {
	APIVersion      string `json:"apiVersion"`
	Kind            string `json:"kind"`
	Resources       []string
	SecretGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"secretGenerator"`
	Patches []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// httpsDir is the overlay that turns HTTPS on: a sibling of this base,
// since kustomize refuses an overlay inside its base's directory.
const httpsDir = "../kubernetes-https"

// httpsTLSDir is where the container reads the public port's files.
const httpsTLSDir = "/etc/restarea/http-tls"

// The https overlay's patch, decoded strictly: the base's args with
// https:// URLs and nothing else changed, the certificate's files from
// the generated Secret at the paths the flags name, probes over HTTPS,
// and the files the user writes kept out of git.
func TestHTTPSOverlay(t *testing.T) {
	b := loadBase(t)
	raw, err := os.ReadFile(filepath.Join(httpsDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k httpsOverlay
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", httpsDir, err)
	}
	if !slices.Equal(k.Resources, []string{"../kubernetes"}) || len(k.Patches) != 2 || len(k.SecretGenerator) != 1 {
		t.Fatalf("the https overlay: want the base, two patches (StatefulSet, backup CronJob) and one Secret: %+v", k)
	}
	gen := k.SecretGenerator[0]
	var keys []string
	for _, f := range gen.Files {
		key, path, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(path, "tls/") {
			t.Errorf("secret file %q: want KEY=tls/FILE", f)
		}
		keys = append(keys, key)
	}
	if !slices.Equal(keys, []string{"tls.crt", "tls.key", "ca.crt"}) {
		t.Errorf("the Secret's keys are %v", keys)
	}
	if ignore, err := os.ReadFile(filepath.Join(httpsDir, ".gitignore")); err != nil || !slices.Contains(strings.Fields(string(ignore)), "tls/") {
		t.Errorf("the https overlay's .gitignore must list tls/ (the key the user writes): %v", err)
	}

	doc, err := os.ReadFile(filepath.Join(httpsDir, k.Patches[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	var p appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(doc, &p); err != nil {
		t.Fatalf("%s: %v", k.Patches[0].Path, err)
	}
	if p.Name != b.sts.Name || len(p.Spec.Template.Spec.Containers) != 1 || p.Spec.Template.Spec.Containers[0].Name != b.container.Name {
		t.Fatalf("the patch does not name the base's StatefulSet and container")
	}
	c := p.Spec.Template.Spec.Containers[0]
	want := slices.Clone(b.container.Args)
	for i, a := range want {
		if strings.HasPrefix(a, "--advertise-url=") || strings.HasPrefix(a, "--join=") {
			want[i] = strings.ReplaceAll(a, "http://", "https://")
		}
	}
	if !slices.Equal(c.Args, want) {
		t.Errorf("the patch's args drifted from the base's (only the URLs' scheme may differ):\n got %q\nwant %q", c.Args, want)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for name, v := range map[string]string{
		"RESTAREA_HTTP_TLS_CERT": httpsTLSDir + "/tls.crt", "RESTAREA_HTTP_TLS_KEY": httpsTLSDir + "/tls.key", "RESTAREA_HTTP_TLS_CA": httpsTLSDir + "/ca.crt",
	} {
		if env[name] != v {
			t.Errorf("env %s = %q, want %q", name, env[name], v)
		}
	}
	if !strings.HasPrefix(env["RESTAREA_PUBLIC_URL"], "https://") {
		t.Errorf("RESTAREA_PUBLIC_URL = %q, want https://", env["RESTAREA_PUBLIC_URL"])
	}
	for name, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("the %s probe is not over HTTPS", name)
		}
	}
	vols := p.Spec.Template.Spec.Volumes
	if len(vols) != 1 || vols[0].Secret == nil || vols[0].Secret.SecretName != gen.Name {
		t.Fatalf("want one volume from Secret %s: %+v", gen.Name, vols)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != vols[0].Name || c.VolumeMounts[0].MountPath != httpsTLSDir || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("want %s mounted read-only at %s: %+v", vols[0].Name, httpsTLSDir, c.VolumeMounts)
	}
	checkBackupHTTPSPatch(t, b, filepath.Join(httpsDir, k.Patches[1].Path), gen.Name)
}

// checkBackupHTTPSPatch checks the overlay's patch of the backup CronJob:
// the base's args with the https:// URL and the CA in place of
// --insecure, that CA (only) mounted from the certificate's Secret.
func checkBackupHTTPSPatch(t *testing.T, b *base, path, tlsSecret string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p batchv1.CronJob
	if err := yaml.UnmarshalStrict(doc, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	spec := p.Spec.JobTemplate.Spec.Template.Spec
	base := b.backup.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	if p.Name != b.backup.Name || len(spec.Containers) != 1 || spec.Containers[0].Name != base.Name {
		t.Fatalf("%s does not name the base's backup CronJob and container", path)
	}
	c := spec.Containers[0]
	var want []string
	for _, a := range base.Args {
		switch {
		case a == "--insecure":
			want = append(want, "--ca="+httpsTLSDir+"/ca.crt")
		case strings.HasPrefix(a, "--server="):
			want = append(want, strings.ReplaceAll(a, "http://", "https://"))
		default:
			want = append(want, a)
		}
	}
	if !slices.Equal(c.Args, want) {
		t.Errorf("the backup patch's args drifted from the base's (only the scheme and --insecure → --ca may differ):\n got %q\nwant %q", c.Args, want)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || spec.Volumes[0].Secret.SecretName != tlsSecret ||
		len(spec.Volumes[0].Secret.Items) != 1 || spec.Volumes[0].Secret.Items[0].Key != "ca.crt" {
		t.Fatalf("the backup patch: want one volume with the key ca.crt of Secret %s: %+v", tlsSecret, spec.Volumes)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != spec.Volumes[0].Name || c.VolumeMounts[0].MountPath != httpsTLSDir || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("the backup patch: want %s mounted read-only at %s: %+v", spec.Volumes[0].Name, httpsTLSDir, c.VolumeMounts)
	}
}

// Where kubectl is installed, the overlay builds (with test files in a
// copy of the directories) and the built StatefulSet keeps the base's
// environment and data volume, adds the certificate's, refers to the
// generated Secret by its hashed name and probes over HTTPS.
func TestKubectlKustomizeBuildHTTPS(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("SKIP: kubectl is not on PATH; TestHTTPSOverlay covers the patch")
	}
	dir := t.TempDir()
	copyGlob := func(pattern, to string) {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(to, 0o755)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	baseDir, overlay := filepath.Join(dir, "kubernetes"), filepath.Join(dir, "kubernetes-https")
	copyGlob("*.yaml", baseDir)
	copyGlob(filepath.Join(httpsDir, "*.yaml"), overlay)
	os.WriteFile(filepath.Join(baseDir, "secrets.env"), []byte("cluster-secret="+randHex(24)+"\nadmin-token="+randHex(20)+"\n"), 0o600)
	os.MkdirAll(filepath.Join(overlay, "tls"), 0o700)
	for _, f := range []string{"http.pem", "http-key.pem", "ca.pem"} {
		os.WriteFile(filepath.Join(overlay, "tls", f), []byte("test "+f+"\n"), 0o600)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", overlay)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v: %s", err, stderr.Bytes())
	}
	var sts *appsv1.StatefulSet
	var cron *batchv1.CronJob
	var tlsSecret string
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		var om struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		yaml.Unmarshal(doc, &om)
		switch {
		case tm.Kind == "StatefulSet":
			sts = &appsv1.StatefulSet{}
			if err := yaml.UnmarshalStrict(doc, sts); err != nil {
				t.Fatalf("built StatefulSet: %v", err)
			}
		case tm.Kind == "CronJob":
			cron = &batchv1.CronJob{}
			if err := yaml.UnmarshalStrict(doc, cron); err != nil {
				t.Fatalf("built CronJob: %v", err)
			}
		case tm.Kind == "Secret" && strings.HasPrefix(om.Metadata.Name, "restarea-http-tls-"):
			tlsSecret = om.Metadata.Name
		}
	}
	if sts == nil || cron == nil || tlsSecret == "" {
		t.Fatalf("the build lacks the StatefulSet, the CronJob or the certificate's Secret:\n%s", out)
	}
	// The built CronJob: https://, the CA, both Secrets by their hashed
	// names.
	cspec := cron.Spec.JobTemplate.Spec.Template.Spec
	if args := cspec.Containers[0].Args; slices.Contains(args, "--insecure") || !slices.Contains(args, "--server=https://restarea:8080") {
		t.Errorf("the built backup CronJob's args: %q", args)
	}
	var secretVols []string
	token, ca := false, false
	for _, v := range cspec.Volumes {
		if v.Secret != nil {
			secretVols = append(secretVols, v.Secret.SecretName)
			token = token || strings.HasPrefix(v.Secret.SecretName, "restarea-secrets-")
			ca = ca || v.Secret.SecretName == tlsSecret
		}
	}
	if !token || !ca || len(cspec.Containers[0].VolumeMounts) != 3 {
		t.Errorf("the built backup CronJob mounts Secrets %v (%d mounts), want the backups, the token and the CA", secretVols, len(cspec.Containers[0].VolumeMounts))
	}
	spec := sts.Spec.Template.Spec
	c := spec.Containers[0]
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	for _, name := range []string{"POD_NAME", "RESTAREA_CLUSTER_SECRET_FILE", "RESTAREA_ADMIN_TOKEN_FILE", "RESTAREA_HTTP_TLS_CERT", "RESTAREA_HTTP_TLS_CA"} {
		if !env[name] {
			t.Errorf("the built container lacks env %s", name)
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["data"] != "/data" || mounts["http-tls"] != httpsTLSDir || mounts["secrets"] == "" {
		t.Errorf("built mounts %v", mounts)
	}
	found := false
	for _, v := range spec.Volumes {
		found = found || (v.Secret != nil && v.Secret.SecretName == tlsSecret)
	}
	if !found {
		t.Errorf("no volume refers to the generated Secret %s", tlsSecret)
	}
	if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("built readiness probe %+v", c.ReadinessProbe.HTTPGet)
	}
}
