package kubernetes

import (
	"context"
	"fmt"
	"net/http"
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
// image set anew, rolled as the StatefulSet's RollingUpdate does (highest
// ordinal first, one pod at a time, each stopped with SIGTERM, recreated
// on its volume with the new image and a new IP, and waited for until its
// readiness path answers) while a client posts and replays: first a canary
// (partition 2: restarea-2 alone), then the rollback (the old image set
// again), then the whole upgrade. Then, where the tree has the route, it
// finalizes the upgrade and posts again. After each phase every pod must
// hold every acknowledged post exactly once.
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

	rel, oldImage := releaseImage(ctx, t, root, s.image)
	s.images = append(s.images, oldImage)
	logf("built %s (the previous release, %s, FROM scratch) as %s", rel.Version, rel.Commit, oldImage)
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
			"as docs/kubernetes.md says; roll the image with settings both releases know first, then the settings", unknown, rel.Version)
	}

	s.image = oldImage
	replicas := s.startPods(b)
	logf("the cluster runs %s: %s", rel.Version, s.memberVersions())

	w := s.newWriter()
	defer w.halt()
	w.setPhase("steady " + rel.Version)
	go w.run(ctx)
	if err := w.waitAcks(ctx, 20, 30*time.Second); err != nil {
		t.Fatalf("steady writes on %s: %v; %v", rel.Version, err, w.problemList())
	}
	s.verify(w, "on "+rel.Version)

	// A canary: kubectl set image with the RollingUpdate's partition at 2
	// first, so that the controller replaces restarea-2 alone.
	w.setPhase("canary")
	s.rollTo(w, newImage, 2, 70)
	s.verify(w, "with restarea-2 on the current image")

	// Before finalizing, the way back: the previous release's image set
	// again (partition 0); the controller replaces the pods whose image
	// differs from the template's, restarea-2 here.
	w.setPhase("rollback")
	s.rollTo(w, oldImage, 0, 80)
	s.verify(w, "after the rollback to "+rel.Version)

	// The upgrade: the current image, partition 0: from the highest
	// ordinal down, each once the previous one is ready.
	w.setPhase("upgrade")
	s.rollTo(w, newImage, 0, 90)
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

// rollTo does what the StatefulSet controller does once the template's
// image is set to image with the RollingUpdate's partition: from the
// highest ordinal down to partition, each pod whose image differs stopped
// with SIGTERM, recreated on its volume with image (and a new IP: the
// subnet's ipBase+ordinal), and waited for until ready and a voter of a
// cluster with a leader, and the client's posts acknowledged again, before
// the next one.
func (s *sim) rollTo(w *writer, image string, partition, ipBase int) {
	s.t.Helper()
	s.image = image
	for i := len(s.pods) - 1; i >= partition; i-- {
		p := s.pods[i]
		if p.image == image {
			continue
		}
		from := p.image
		stopStart := time.Now()
		s.must(docker(s.ctx, "stop", "-t", strconv.Itoa(p.run.grace), p.container))
		code := s.mustOut(docker(s.ctx, "inspect", "-f", "{{.State.ExitCode}}", p.container))
		s.logf("docker stop %s (SIGTERM, %s): exit code %s after %v", p.run.name, from, code, time.Since(stopStart).Round(time.Millisecond))
		if code != "0" {
			s.t.Errorf("%s (%s) exited %s after SIGTERM, want 0 (a graceful stop within %ds)", p.run.name, from, code, p.run.grace)
		}
		s.must(docker(s.ctx, "rm", "-f", p.container))
		p.ip = s.subnet + strconv.Itoa(ipBase+i)
		s.start(p)
		s.waitReady([]*simPod{p}, 90*time.Second)
		s.waitLeader(len(s.pods), 30*time.Second)
		s.logf("%s recreated on its volume with %s at %s: ready; %s", p.run.name, image, p.ip, s.memberVersions())
		if err := w.waitAcks(s.ctx, 5, 30*time.Second); err != nil {
			s.t.Fatalf("writes after moving %s to %s: %v; %v", p.run.name, image, err, w.problemList())
		}
	}
	s.checkNamesNotIPs()
}

// finalize asks the pods in turn to finalize the upgrade, as `restarea
// admin finalize-upgrade` does, until one answers 200 (true); 404, the
// route missing from this tree, returns false. No answer, 409 (a member
// not yet seen on the new release) and 503 are asked again for up to 30 s;
// any other answer fails the test.
func (s *sim) finalize() bool {
	s.t.Helper()
	var done bool
	try := 0
	s.poll("POST "+finalizePath+" answered 200 or 404", 30*time.Second, func() (bool, string) {
		p := s.pods[try%len(s.pods)]
		try++
		req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, p.url()+finalizePath, nil)
		if err != nil {
			s.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.secret["admin-token"])
		code, err := s.do(req, nil)
		switch {
		case err != nil || code == http.StatusConflict || code == http.StatusServiceUnavailable:
			return false, fmt.Sprintf("%s: %d %v", p.run.name, code, err)
		case code == http.StatusOK:
			done = true
			return true, ""
		case code == http.StatusNotFound:
			return true, ""
		}
		s.t.Fatalf("POST %s on %s: %d", finalizePath, p.run.name, code)
		return false, ""
	})
	return done
}

// memberVersions says which version each pod reports as its own in GET
// /api/v1/cluster, for the log ("?" where the build reports none, as
// releases before the field do not).
func (s *sim) memberVersions() string {
	s.t.Helper()
	var parts []string
	for _, p := range s.pods {
		var st struct {
			Version string `json:"version"`
		}
		if code, err := s.get(p, "/api/v1/cluster", false, &st); err != nil || code != http.StatusOK {
			parts = append(parts, fmt.Sprintf("%s: %d %v", p.run.name, code, err))
			continue
		}
		if st.Version == "" {
			st.Version = "?"
		}
		parts = append(parts, p.run.name+" "+st.Version)
	}
	return "versions reported: " + strings.Join(parts, ", ")
}
