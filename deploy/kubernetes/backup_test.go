package kubernetes

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// The backup CronJob runs `restarea admin backup --dir --keep` daily, one
// at a time, as the nodes' non-root user on a read-only root, into the
// backup claim, with the admin token as a file of the generated Secret
// (that key only) and the client Service as its server.
func TestBackupCronJob(t *testing.T) {
	b := loadBase(t)
	cj, pvc := b.backup, b.backupPVC
	if cj.Spec.Schedule == "" || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Etc/UTC" {
		t.Errorf("schedule %q time zone %v, want a daily schedule in Etc/UTC", cj.Spec.Schedule, cj.Spec.TimeZone)
	}
	if f := strings.Fields(cj.Spec.Schedule); len(f) != 5 || f[2] != "*" || f[3] != "*" || f[4] != "*" {
		t.Errorf("schedule %q is not daily", cj.Spec.Schedule)
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid", cj.Spec.ConcurrencyPolicy)
	}
	job := cj.Spec.JobTemplate.Spec
	if job.ActiveDeadlineSeconds == nil || *job.ActiveDeadlineSeconds < 11*60 {
		t.Errorf("activeDeadlineSeconds %v: want more than the backup's own 10 min", job.ActiveDeadlineSeconds)
	}
	spec := job.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restartPolicy %q", spec.RestartPolicy)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := &spec.Containers[0]
	if c.Image != b.container.Image {
		t.Errorf("image %q, want the nodes' %q (the same release)", c.Image, b.container.Image)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks must be false: service links inject RESTAREA_* variables")
	}
	psc, csc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
		csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Error("the backup runs as non-root on a read-only root without privilege escalation")
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("env %s comes from a Secret; mount it as a file instead", e.Name)
		}
	}

	if len(c.Args) < 2 || c.Args[0] != "admin" || c.Args[1] != "backup" {
		t.Fatalf("args %q, want admin backup ...", c.Args)
	}
	dir, _ := arg(c.Args, "dir")
	if keep, _ := arg(c.Args, "keep"); keep == "" || keep == "0" {
		t.Errorf("--keep=%q: want a number of backups to keep", keep)
	}
	if server, _ := arg(c.Args, "server"); server != "http://"+b.client.Name+":8080" || b.client.Spec.Ports[0].Port != 8080 {
		t.Errorf("--server=%q, want the client Service http://%s:8080", server, b.client.Name)
	}
	secrets := secretMount(t, "the backup CronJob", spec, c, b.kust.SecretGenerator[0].Name)
	if tok, _ := arg(c.Args, "admin-token-file"); tok != secrets+"/admin-token" {
		t.Errorf("--admin-token-file=%q, want %s/admin-token", tok, secrets)
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil && !slices.EqualFunc(v.Secret.Items, []corev1.KeyToPath{{Key: "admin-token", Path: "admin-token"}},
			func(a, b corev1.KeyToPath) bool { return a.Key == b.Key && a.Path == b.Path }) {
			t.Errorf("the backup mounts Secret keys %+v; it needs admin-token only", v.Secret.Items)
		}
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			mounted = mounted || (m.Name == v.Name && m.MountPath == dir && !m.ReadOnly &&
				v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name)
		}
	}
	if dir == "" || !mounted {
		t.Errorf("--dir=%q is not the writable mount of the claim %s", dir, pvc.Name)
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.IsZero() {
		t.Error("the backup claim requests no storage")
	}
}
