package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// simTimeout bounds the whole simulation, image build included.
const simTimeout = 4 * time.Minute

// simNamespace is the namespace the simulated pods believe they run in.
const simNamespace = "default"

// TestStatefulSetInDocker runs the pods the StatefulSet describes as docker
// containers: each gets the args and environment the kubelet would give
// it (derived from the decoded manifest: pod name and namespace through
// the downward API, the Secret's keys as files where its volume is mounted), the same user, read-only root
// filesystem and dropped capabilities, its own volume, and its stable DNS
// name as a network alias. While a client posts and replays, it kills the
// leader's container, recreates it with a new IP on the same volume, then
// restarts every container in turn with SIGTERM as a rolling update does,
// and last scales to five pods (they join as voters) and back to three
// (members removed through the admin API first). After each phase every
// node must hold every acknowledged post exactly once. The kubelet's
// probes do not run here; the test itself waits for the readiness probe's
// path where a rolling update would.
func TestStatefulSetInDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: this test builds a docker image and runs a three-container cluster")
	}
	dockerUsable(t)
	b := loadBase(t)
	ctx, cancel := context.WithTimeout(context.Background(), simTimeout)
	defer cancel()
	s, root := newSim(ctx, t)
	s.logf("building the image %s (static binary, FROM scratch)", s.image)
	buildImage(ctx, t, root, s.image)
	s.images = append(s.images, s.image)
	replicas := s.startPods(b)
	logf := s.logf

	w := s.newWriter()
	defer w.halt()
	w.setPhase("steady")
	go w.run(ctx)
	if err := w.waitAcks(ctx, 20, 30*time.Second); err != nil {
		t.Fatalf("steady writes: %v; %v", err, w.problemList())
	}

	// Phase 1: the leader's pod dies and is rescheduled with a new IP.
	w.setPhase("reschedule")
	leader := s.waitLeader(replicas, 30*time.Second)
	li := s.index(leader)
	p := s.pods[li]
	oldIP := p.ip
	logf("docker kill %s (the leader, %s)", p.run.name, oldIP)
	s.must(docker(ctx, "kill", p.container))
	s.must(docker(ctx, "rm", "-f", p.container))
	if err := w.waitAcks(ctx, 10, 60*time.Second); err != nil {
		t.Fatalf("writes with %s gone: %v; %v", p.run.name, err, w.problemList())
	}
	p.ip = s.subnet + strconv.Itoa(50+li)
	logf("recreating %s on the same volume with a new IP %s (was %s)", p.run.name, p.ip, oldIP)
	s.start(p)
	s.waitReady([]*simPod{p}, 90*time.Second)
	if got := s.inspectIP(p); got != p.ip || got == oldIP {
		t.Fatalf("%s runs at %s, want the new address %s", p.run.name, got, p.ip)
	}
	s.waitLeader(replicas, 30*time.Second)
	if err := w.waitAcks(ctx, 10, 30*time.Second); err != nil {
		t.Fatalf("writes after the reschedule: %v; %v", err, w.problemList())
	}
	s.checkNamesNotIPs()
	s.verify(w, "after the reschedule")

	// Phase 2: a rolling restart, highest ordinal first, one pod at a time,
	// each stopped with SIGTERM and waited for until ready.
	w.setPhase("rolling restart")
	for i := len(s.pods) - 1; i >= 0; i-- {
		p := s.pods[i]
		stopStart := time.Now()
		s.must(docker(ctx, "stop", "-t", strconv.Itoa(p.run.grace), p.container))
		code := s.mustOut(docker(ctx, "inspect", "-f", "{{.State.ExitCode}}", p.container))
		logf("docker stop %s (SIGTERM): exit code %s after %v", p.run.name, code, time.Since(stopStart).Round(time.Millisecond))
		if code != "0" {
			t.Errorf("%s exited %s after SIGTERM, want 0 (a graceful stop within %ds)", p.run.name, code, p.run.grace)
		}
		s.must(docker(ctx, "start", p.container))
		s.waitReady([]*simPod{p}, 90*time.Second)
		logf("%s ready again", p.run.name)
		if err := w.waitAcks(ctx, 5, 30*time.Second); err != nil {
			t.Fatalf("writes after restarting %s: %v; %v", p.run.name, err, w.problemList())
		}
	}
	s.verify(w, "after the rolling restart")

	// Phase 3: kubectl scale 3 -> 5 (the new pods join as voters), then
	// back to 3 the documented way: each member removed through the admin
	// API first, then its pod deleted.
	w.setPhase("scale 3->5->3")
	var added []*simPod
	for i := replicas; i < replicas+2; i++ {
		added = append(added, s.addPod(b, i))
	}
	for _, p := range added {
		s.start(p)
	}
	s.waitReady(added, 90*time.Second)
	logf("%s and %s ready", added[0].run.name, added[1].run.name)
	s.waitLeader(replicas+2, 30*time.Second)
	s.checkNamesNotIPs()
	logf("scaled to %d: every pod is a voter", len(s.pods))
	if err := w.waitAcks(ctx, 5, 30*time.Second); err != nil {
		t.Fatalf("writes with five pods: %v; %v", err, w.problemList())
	}
	s.verify(w, "with five pods")
	for i := len(s.pods) - 1; i >= replicas; i-- {
		p := s.pods[i]
		s.removeMember(p.run.name)
		s.must(docker(ctx, "stop", "-t", strconv.Itoa(p.run.grace), p.container))
		logf("removed member %s through the admin API, then stopped its pod", p.run.name)
	}
	s.pods = s.pods[:replicas]
	s.waitLeader(replicas, 30*time.Second)
	if err := w.waitAcks(ctx, 5, 30*time.Second); err != nil {
		t.Fatalf("writes after scaling back to %d: %v; %v", replicas, err, w.problemList())
	}

	w.halt()
	s.waitLeader(replicas, 30*time.Second)
	s.verify(w, "at the end")

	s.report(w)
}

// newSim prepares a simulation (nothing started yet) and returns it with
// the repository's root; its cleanup removes whatever it will have made.
func newSim(ctx context.Context, t *testing.T) (*sim, string) {
	t.Helper()
	begin := time.Now()
	logf := func(format string, a ...any) {
		t.Helper()
		t.Logf("[%5.1fs] "+format, append([]any{time.Since(begin).Seconds()}, a...)...)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	suffix := randHex(4)
	s := &sim{t: t, ctx: ctx, logf: logf, prefix: "restarea-k8s-" + suffix, image: "restarea:k8s-sim-" + suffix,
		suffix: suffix,
		http:   &http.Client{Timeout: 10 * time.Second},
		secret: map[string]string{"cluster-secret": randHex(24), "admin-token": randHex(20)}}
	s.network = s.prefix + "-net"
	t.Cleanup(s.teardown)
	return s, root
}

// startPods makes the network and starts the pods b's StatefulSet has,
// all at once (podManagementPolicy: Parallel), on s.image; it returns once
// they are ready, agree on a leader and take the test's posts, and it
// returns their number.
func (s *sim) startPods(b *base) int {
	s.t.Helper()
	s.ready = b.container.ReadinessProbe.HTTPGet.Path
	var err error
	if s.subnet, err = createNetwork(s.ctx, s.network); err != nil {
		s.t.Fatalf("network: %v", err)
	}
	s.netMade = true
	replicas := int(*b.sts.Spec.Replicas)
	for i := range replicas {
		s.addPod(b, i)
	}
	p0 := s.pods[0].run
	s.logf("pod %s: user %s, read-only %v, cap-drop %v, env %v, args %q", p0.name, p0.user, p0.readOnly, p0.capDrop, p0.envNames(), p0.args)
	for _, p := range s.pods {
		s.start(p)
	}
	s.waitReady(s.pods, 90*time.Second)
	leader := s.waitLeader(replicas, 30*time.Second)
	s.logf("all %d pods ready; leader %s", replicas, leader)
	s.waitURLs()
	s.checkNamesNotIPs()
	s.raiseLimits()
	return replicas
}

// newWriter returns a writer over the pods' published ports.
func (s *sim) newWriter() *writer {
	var urls, names []string
	for _, p := range s.pods {
		urls, names = append(urls, p.url()), append(names, p.run.name)
	}
	return newWriter(urls, names, "k8s sim "+s.suffix)
}

// report fails the test for the writer's problems and prints each phase's
// longest write unavailability; the writer must be halted.
func (s *sim) report(w *writer) {
	s.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, pr := range w.problems {
		s.t.Error(pr)
	}
	for _, ph := range w.phases {
		st := w.stats[ph]
		fmt.Printf("k8s simulation, phase %-16s longest write unavailability %6d ms (%d posts acknowledged, %d of them replays, %d failed attempts retried)\n",
			ph+":", st.maxGap.Milliseconds(), st.acks, st.replays, st.failedAttempts)
		if len(st.maxGapWrite) > 0 {
			s.logf("  %s: the longest gap ended with a write whose attempts were (pod: outcome in time): %s", ph, strings.Join(st.maxGapWrite, "; "))
		}
	}
	s.logf("%d distinct posts acknowledged, each on every node once", len(w.acked))
}

type sim struct {
	t       *testing.T
	ctx     context.Context
	logf    func(string, ...any)
	http    *http.Client
	prefix  string
	suffix  string
	image   string   // the image the StatefulSet's template names now
	images  []string // every image the test built, for the cleanup
	network string
	subnet  string // "10.x.y."
	secret  map[string]string
	ready   string    // the readiness probe's path
	pods    []*simPod // the pods the StatefulSet has now
	all     []*simPod // every pod ever made, for the cleanup
	volumes []string
	netMade bool
}

type simPod struct {
	run       podRun
	image     string // the image it runs
	container string
	volume    string
	ip        string
	port      int // the HTTP port published on loopback
}

func (p *simPod) url() string { return "http://127.0.0.1:" + strconv.Itoa(p.port) }

func (s *sim) must(_ string, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *sim) mustOut(out string, err error) string {
	s.t.Helper()
	s.must(out, err)
	return out
}

// addPod prepares pod ordinal (its run, its volume: the PVC), appends it
// to the pods and returns it; start runs it.
func (s *sim) addPod(b *base, ordinal int) *simPod {
	s.t.Helper()
	p, err := podFor(b, ordinal, simNamespace, s.secret)
	if err != nil {
		s.t.Fatalf("pod %d: %v", ordinal, err)
	}
	p.binds = writeSecretDirs(s.t, p.secretDirs)
	vol := fmt.Sprintf("%s-data-%s", s.prefix, p.name) // the PVC data-restarea-N
	if _, err := docker(s.ctx, "volume", "create", "--label", "restarea-k8s-sim", vol); err != nil {
		s.t.Fatal(err)
	}
	s.volumes = append(s.volumes, vol)
	pod := &simPod{run: p, volume: vol, container: s.prefix + "-" + p.name,
		port: freePort(s.t), ip: s.subnet + strconv.Itoa(10+ordinal)}
	s.pods = append(s.pods, pod)
	s.all = append(s.all, pod)
	return pod
}

// removeMember removes id from the cluster through the admin API
// (DELETE /api/v1/admin/cluster/members/{id}) on the first pod.
func (s *sim) removeMember(id string) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, http.MethodDelete, s.pods[0].url()+"/api/v1/admin/cluster/members/"+url.PathEscape(id), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.secret["admin-token"])
	if code, err := s.do(req, nil); err != nil || code != http.StatusOK {
		s.t.Fatalf("DELETE /api/v1/admin/cluster/members/%s: %d %v", id, code, err)
	}
}

func (s *sim) start(p *simPod) {
	s.t.Helper()
	s.must(docker(s.ctx, p.run.runArgs(p.container, s.image, s.network, p.ip, p.volume, p.port)...))
	p.image = s.image
}

func (s *sim) inspectIP(p *simPod) string {
	s.t.Helper()
	return s.mustOut(docker(s.ctx, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", p.container))
}

func (s *sim) index(id string) int {
	s.t.Helper()
	i := slices.IndexFunc(s.pods, func(p *simPod) bool { return p.run.name == id })
	if i < 0 {
		s.t.Fatalf("node id %q is no pod's name", id)
	}
	return i
}

// teardown removes every container, volume, the network and the image,
// after a failure first logging the containers' output.
func (s *sim) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range s.all {
		if s.t.Failed() {
			if out, err := docker(ctx, "logs", "--tail", "60", p.container); err == nil {
				s.t.Logf("logs of %s:\n%s", p.run.name, out)
			}
		}
		if _, err := docker(ctx, "rm", "-f", "-v", p.container); err != nil && !strings.Contains(err.Error(), "No such container") {
			s.t.Errorf("cleanup: %v", err)
		}
	}
	for _, v := range s.volumes {
		if _, err := docker(ctx, "volume", "rm", "-f", v); err != nil {
			s.t.Errorf("cleanup: %v", err)
		}
	}
	if s.netMade {
		if _, err := docker(ctx, "network", "rm", s.network); err != nil {
			s.t.Errorf("cleanup: %v", err)
		}
	}
	for _, im := range s.images {
		if _, err := docker(ctx, "rmi", "-f", im); err != nil {
			s.t.Errorf("cleanup: %v", err)
		}
	}
}

// get fetches path from pod p into out (the "data" member), with the admin
// token when admin is set.
func (s *sim) get(p *simPod, path string, admin bool, out any) (int, error) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, p.url()+path, nil)
	if err != nil {
		return 0, err
	}
	if admin {
		req.Header.Set("Authorization", "Bearer "+s.secret["admin-token"])
	}
	return s.do(req, out)
}

func (s *sim) do(req *http.Request, out any) (int, error) {
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || out == nil {
		return resp.StatusCode, err
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return resp.StatusCode, fmt.Errorf("%v: %s", err, b)
	}
	return resp.StatusCode, json.Unmarshal(env.Data, out)
}

// poll calls try every 250ms until it reports done; past within (or the
// test's deadline) it fails with the last state.
func (s *sim) poll(what string, within time.Duration, try func() (bool, string)) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		done, state := try()
		if done {
			return
		}
		if time.Now().After(deadline) || s.ctx.Err() != nil {
			s.t.Fatalf("%s: not reached within %v (last: %s)", what, within, state)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitReady waits for the readiness probe's path to answer 200 on pods.
func (s *sim) waitReady(pods []*simPod, within time.Duration) {
	s.t.Helper()
	s.poll(s.ready+" on "+fmt.Sprint(len(pods))+" pod(s)", within, func() (bool, string) {
		var parts []string
		ok := true
		for _, p := range pods {
			code, err := s.get(p, s.ready, false, nil)
			parts = append(parts, fmt.Sprintf("%s=%d %v", p.run.name, code, err))
			ok = ok && err == nil && code == http.StatusOK
		}
		return ok, strings.Join(parts, "; ")
	})
}

type clusterStatus struct {
	LeaderID     string `json:"leader_id"`
	LeaderURL    string `json:"leader_url"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	Members      []struct {
		ID       string `json:"id"`
		RaftAddr string `json:"raft_addr"`
		URL      string `json:"url"`
		Suffrage string `json:"suffrage"`
	} `json:"members"`
}

// waitLeader waits until every pod names the same leader among members
// voters, and returns its id.
func (s *sim) waitLeader(members int, within time.Duration) string {
	s.t.Helper()
	var leader string
	s.poll("one leader seen by every pod", within, func() (bool, string) {
		leader = ""
		var parts []string
		agree := true
		for _, p := range s.pods {
			var st clusterStatus
			code, err := s.get(p, "/api/v1/cluster", false, &st)
			parts = append(parts, fmt.Sprintf("%s: %d leader=%q members=%d %v", p.run.name, code, st.LeaderID, len(st.Members), err))
			voters := 0
			for _, m := range st.Members {
				if m.Suffrage == "voter" {
					voters++
				}
			}
			if err != nil || code != http.StatusOK || st.LeaderID == "" || voters != members || (leader != "" && st.LeaderID != leader) {
				agree = false
			}
			leader = st.LeaderID
		}
		return agree, strings.Join(parts, "; ")
	})
	return leader
}

// waitURLs waits until every pod lists a URL for every member: a cluster
// just formed records some members' URLs a moment after it has a leader
// (seen under load: restarea-0's URL still "" on all three).
func (s *sim) waitURLs() {
	s.t.Helper()
	s.poll("every member's URL recorded on every pod", 30*time.Second, func() (bool, string) {
		var missing []string
		for _, p := range s.pods {
			var st clusterStatus
			if code, err := s.get(p, "/api/v1/cluster", true, &st); err != nil || code != http.StatusOK {
				return false, fmt.Sprintf("%s: %d %v", p.run.name, code, err)
			}
			for _, m := range st.Members {
				if m.URL == "" {
					missing = append(missing, p.run.name+" lacks "+m.ID+"'s")
				}
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
}

// checkNamesNotIPs checks that every member is recorded by its pod's DNS
// name, for raft and for its URL: nothing in the cluster's state holds an
// IP that a rescheduled pod would no longer have.
func (s *sim) checkNamesNotIPs() {
	s.t.Helper()
	for _, p := range s.pods {
		var st clusterStatus
		// Addresses are shown to operators only: ask with the admin token.
		if code, err := s.get(p, "/api/v1/cluster", true, &st); err != nil || code != http.StatusOK {
			s.t.Fatalf("GET /api/v1/cluster on %s: %d %v", p.run.name, code, err)
		}
		for _, m := range st.Members {
			q := s.pods[s.index(m.ID)]
			raftAddr, _ := arg(q.run.args, "raft-advertise")
			url, _ := arg(q.run.args, "advertise-url")
			if !strings.HasPrefix(raftAddr, q.run.dnsName+":") || m.RaftAddr != raftAddr || m.URL != url {
				s.t.Errorf("%s lists member %s at raft %q url %q; want its DNS name: %q, %q", p.run.name, m.ID, m.RaftAddr, m.URL, raftAddr, url)
			}
		}
		if st.LeaderURL == "" || !strings.Contains(st.LeaderURL, ".svc.cluster.local:") {
			s.t.Errorf("%s gives the leader's URL as %q, not a DNS name", p.run.name, st.LeaderURL)
		}
	}
}

// raiseLimits sets the post limits through the admin API, as an operator
// would: every request of the test reaches the pods from one address (the
// docker gateway), and the defaults (30 posts a minute per source) would
// turn the client away.
func (s *sim) raiseLimits() {
	s.t.Helper()
	body := []byte(`{"per_source_limit":{"count":1000000,"window_seconds":60},"global_limit":{"count":1000000,"window_seconds":3600}}`)
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPut, s.pods[0].url()+"/api/v1/admin/settings", bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.secret["admin-token"])
	req.Header.Set("Content-Type", "application/json")
	if code, err := s.do(req, nil); err != nil || code != http.StatusOK {
		s.t.Fatalf("PUT /api/v1/admin/settings: %d %v", code, err)
	}
}

// verify waits until every pod has applied the leader's commit index, then
// reads every entry on every pod through the admin API (all pages) and
// checks that each acknowledged post is there exactly once, under its
// request_id, that no request_id has two entries, and that nothing else is
// stored but posts the client sent without seeing their answer.
func (s *sim) verify(w *writer, when string) {
	s.t.Helper()
	acked := w.snapshot()
	leader := s.pods[s.index(s.waitLeader(len(s.pods), 30*time.Second))]
	var st clusterStatus
	if code, err := s.get(leader, "/api/v1/cluster", false, &st); err != nil || code != http.StatusOK {
		s.t.Fatalf("GET /api/v1/cluster on the leader: %d %v", code, err)
	}
	for _, p := range s.pods {
		s.poll(fmt.Sprintf("%s applied_index >= %d", p.run.name, st.CommitIndex), 30*time.Second, func() (bool, string) {
			var ps clusterStatus
			code, err := s.get(p, "/api/v1/cluster", false, &ps)
			return err == nil && code == http.StatusOK && ps.AppliedIndex >= st.CommitIndex, fmt.Sprintf("%d applied %d %v", code, ps.AppliedIndex, err)
		})
		entries, pages := s.entries(p)
		sent := w.sentSnapshot()
		ids := map[string]int{}
		byRequest := map[string][]string{}
		for _, e := range entries {
			ids[e.ID]++
			byRequest[e.RequestID] = append(byRequest[e.RequestID], e.ID)
		}
		bad := 0
		report := func(format string, a ...any) {
			s.t.Helper()
			if bad++; bad <= 5 {
				s.t.Errorf("%s, %s: "+format, append([]any{when, p.run.name}, a...)...)
			}
		}
		for rid, id := range acked {
			if ids[id] != 1 || !slices.Equal(byRequest[rid], []string{id}) {
				report("acknowledged entry %s (request_id %s) listed %d times; entries under its request_id: %v", id, rid, ids[id], byRequest[rid])
			}
		}
		for rid, list := range byRequest {
			if len(list) != 1 {
				report("request_id %s has %d entries: %v", rid, len(list), list)
			}
			if _, ok := acked[rid]; !ok && !sent[rid] {
				report("entry %v has request_id %s, which the client never sent", list, rid)
			}
		}
		s.logf("%s: %s holds all %d acknowledged posts exactly once (%d entries in %d pages of admin entries)",
			when, p.run.name, len(acked), len(entries), pages)
	}
}

type entryRef struct {
	ID        string `json:"id"`
	RequestID string `json:"request_id"`
}

// entries reads every entry on p through GET /api/v1/admin/entries, page
// by page.
func (s *sim) entries(p *simPod) ([]entryRef, int) {
	s.t.Helper()
	var all []entryRef
	cursor, pages := "", 0
	for {
		// Small pages, so that paging is exercised too.
		path := "/api/v1/admin/entries?limit=25"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Entries    []entryRef `json:"entries"`
			NextCursor *string    `json:"next_cursor"`
		}
		if code, err := s.get(p, path, true, &page); err != nil || code != http.StatusOK {
			s.t.Fatalf("GET %s on %s: %d %v", path, p.run.name, code, err)
		}
		pages++
		all = append(all, page.Entries...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all, pages
		}
		if pages > 1000 {
			s.t.Fatalf("GET /api/v1/admin/entries on %s: more than 1000 pages", p.run.name)
		}
		cursor = *page.NextCursor
	}
}

// writeSecretDirs writes each Secret directory of a pod into a new host
// directory and returns the binds that mount them read-only where the
// kubelet would. The files are readable by every uid, as the container's
// user is not the test's.
func writeSecretDirs(t *testing.T, dirs []secretDir) []string {
	t.Helper()
	var binds []string
	for _, d := range dirs {
		host := t.TempDir()
		for name, v := range d.files {
			if err := os.WriteFile(filepath.Join(host, name), []byte(v), 0o444); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(host, 0o755); err != nil {
			t.Fatal(err)
		}
		binds = append(binds, host+":"+d.mountPath+":ro")
	}
	return binds
}
