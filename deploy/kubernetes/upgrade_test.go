package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// finalizePath is the admin route that raises the cluster's version once
// every member runs the new release (docs/upgrades.md).
const finalizePath = "/api/v1/admin/cluster/finalize-upgrade"

// TestStatefulSetUpgradeInDocker upgrades the simulated StatefulSet from
// the previous release (RELEASES; its image built from its commit) to the
// current tree's image the way docs/kubernetes.md ("Upgrading to a new
// release") says: the manifests' args and environment unchanged (the test
// first checks the previous release knows every one of them), only the
// image set anew, and the RollingUpdate: highest ordinal first, one pod at
// a time, each stopped with SIGTERM, recreated on its volume with the new
// image and a new IP, and waited for until its readiness path answers,
// while a client posts and replays. Then, where the tree has the route,
// it finalizes the upgrade and posts again. After each phase every pod
// must hold every acknowledged post exactly once.
func TestStatefulSetUpgradeInDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: this test builds two docker images and runs a three-container cluster")
	}
	dockerUsable(t)
	b := loadBase(t)
	ctx, cancel := context.WithTimeout(context.Background(), simTimeout)
	defer cancel()
	s, root := newSim(ctx, t)
	logf := s.logf

	oldImage := s.image + "-previous"
	s.images = append(s.images, oldImage)
	rel := releaseImage(ctx, t, root, oldImage)
	logf("built %s (the previous release, %s, FROM scratch) as %s", rel.version, rel.commit, oldImage)
	newImage := s.image
	buildImage(ctx, t, root, newImage)
	s.images = append(s.images, newImage)
	logf("built the current tree as %s", newImage)

	// The documented procedure changes the image alone: every argument and
	// RESTAREA_* variable of the manifests must mean something to the
	// previous release too (an unknown flag stops its node from starting,
	// an unknown variable is silently ignored), or the docs would have to
	// roll the image and the settings separately.
	probe, err := podFor(b, 0, simNamespace, s.secret)
	if err != nil {
		t.Fatal(err)
	}
	if unknown := unknownSettings(probe, flagsKnown(ctx, t, oldImage)); len(unknown) > 0 {
		t.Fatalf("the manifests give %v, which %s does not know: an upgrade from it cannot change the image alone, "+
			"as docs/kubernetes.md says; roll the image with settings both releases know first, then the settings", unknown, rel.version)
	}

	s.image = oldImage
	replicas := s.startPods(b)
	logf("the cluster runs %s: %s", rel.version, s.memberVersions())

	w := s.newWriter()
	defer w.halt()
	w.setPhase("steady " + rel.version)
	go w.run(ctx)
	if err := w.waitAcks(ctx, 20, 30*time.Second); err != nil {
		t.Fatalf("steady writes on %s: %v; %v", rel.version, err, w.problemList())
	}
	s.verify(w, "on "+rel.version)

	// kubectl set image: the StatefulSet controller replaces the pods
	// from the highest ordinal down, each once the previous one is ready.
	w.setPhase("upgrade")
	s.image = newImage
	for i := len(s.pods) - 1; i >= 0; i-- {
		p := s.pods[i]
		stopStart := time.Now()
		s.must(docker(ctx, "stop", "-t", strconv.Itoa(p.run.grace), p.container))
		code := s.mustOut(docker(ctx, "inspect", "-f", "{{.State.ExitCode}}", p.container))
		logf("docker stop %s (SIGTERM, %s): exit code %s after %v", p.run.name, rel.version, code, time.Since(stopStart).Round(time.Millisecond))
		if code != "0" {
			t.Errorf("%s (%s) exited %s after SIGTERM, want 0 (a graceful stop within %ds)", p.run.name, rel.version, code, p.run.grace)
		}
		s.must(docker(ctx, "rm", "-f", p.container))
		p.ip = s.subnet + strconv.Itoa(70+i)
		s.start(p)
		s.waitReady([]*simPod{p}, 90*time.Second)
		s.waitLeader(replicas, 30*time.Second)
		logf("%s recreated on its volume with the current image at %s: ready; %s", p.run.name, p.ip, s.memberVersions())
		if err := w.waitAcks(ctx, 5, 30*time.Second); err != nil {
			t.Fatalf("writes after upgrading %s: %v; %v", p.run.name, err, w.problemList())
		}
	}
	s.checkNamesNotIPs()
	s.verify(w, "after the upgrade")

	if s.finalize() {
		w.setPhase("finalized")
		logf("finalized: %s", s.memberVersions())
		if err := w.waitAcks(ctx, 20, 30*time.Second); err != nil {
			t.Fatalf("writes after finalizing: %v; %v", err, w.problemList())
		}
	} else {
		logf("finalize not available in this tree (POST %s answers 404): the step is skipped", finalizePath)
	}

	w.halt()
	s.waitLeader(replicas, 30*time.Second)
	s.verify(w, "at the end")
	s.report(w)
}

// finalize asks the first pod to finalize the upgrade, as `restarea admin
// finalize-upgrade` does; it returns false when the route does not exist
// (404), and fails the test on any other answer but 200.
func (s *sim) finalize() bool {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.pods[0].url()+finalizePath, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.secret["admin-token"])
	code, err := s.do(req, nil)
	switch {
	case err == nil && code == http.StatusOK:
		return true
	case err == nil && code == http.StatusNotFound:
		return false
	}
	s.t.Fatalf("POST %s: %d %v", finalizePath, code, err)
	return false
}

// memberVersions says which version each member reports in GET
// /api/v1/cluster, for the log ("not reported" where the tree's cluster
// status has no version per member yet).
func (s *sim) memberVersions() string {
	s.t.Helper()
	var st struct {
		Members []map[string]any `json:"members"`
	}
	if code, err := s.get(s.pods[0], "/api/v1/cluster", true, &st); err != nil || code != http.StatusOK {
		return fmt.Sprintf("GET /api/v1/cluster: %d %v", code, err)
	}
	var parts []string
	for _, m := range st.Members {
		v, ok := m["version"]
		if !ok {
			return "members' versions not reported by GET /api/v1/cluster"
		}
		parts = append(parts, fmt.Sprintf("%v %v", m["id"], v))
	}
	sort.Strings(parts)
	return "members' versions " + strings.Join(parts, ", ")
}
