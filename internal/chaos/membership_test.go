package chaos

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
)

// The membership class adds its four kinds to a schedule, for clusters
// that keep a quorum after one removal, and a schedule stays repeatable.
func TestScheduleMembership(t *testing.T) {
	if got := kindsFor([]string{ClassMembership}, 3); !slices.Equal(got, []string{RemoveFollower, RemoveLeader, GrowShrink, ReplaceNode}) {
		t.Errorf("kinds for 3 nodes: %v", got)
	}
	if got := kindsFor([]string{ClassMembership}, 2); len(got) != 0 {
		t.Errorf("kinds for 2 nodes: %v", got)
	}
	a := ScheduleEvery(1, 28*time.Second, 5*time.Second, []string{ClassMembership}, 3)
	b := ScheduleEvery(1, 28*time.Second, 5*time.Second, []string{ClassMembership}, 3)
	if !slices.Equal(a, b) || len(a) != 5 {
		t.Fatalf("schedules %v and %v", a, b)
	}
	seen := map[string]bool{}
	for _, e := range a {
		if !isMembership(e.Kind) {
			t.Errorf("kind %s", e.Kind)
		}
		seen[e.Kind] = true
	}
	if len(seen) != 4 {
		t.Errorf("seed 1 takes %v, want the four kinds (the process test relies on it)", seen)
	}
	// A shorter cycle gives more faults: 200 in a half-hour soak needs
	// one every 9s at most.
	if n := len(ScheduleEvery(1, 30*time.Minute, 8*time.Second, []string{ClassKill}, 5)); n < 200 {
		t.Errorf("%d faults in 30 minutes at one per 8s", n)
	}
	if n := len(Schedule(1, 30*time.Minute, []string{ClassKill}, 5)); n != 179 {
		t.Errorf("the default cycle changed: %d faults in 30 minutes", n)
	}
}

func TestFaultClasses(t *testing.T) {
	supported := []string{ClassKill, ClassPause, ClassPartition, ClassMembership}
	if got, _ := faultClasses(nil, supported); !slices.Equal(got, []string{ClassKill, ClassPause, ClassPartition}) {
		t.Errorf("default classes %v: membership is asked for by name", got)
	}
	if got, _ := faultClasses([]string{"all"}, supported); !slices.Equal(got, supported) {
		t.Errorf("all: %v", got)
	}
	if got, _ := faultClasses([]string{ClassMembership, ClassMembership}, supported); !slices.Equal(got, []string{ClassMembership}) {
		t.Errorf("membership: %v", got)
	}
	if _, err := faultClasses([]string{ClassMembership}, []string{ClassKill}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("an unsupported class: %v", err)
	}
	if got, err := ParseFaultClasses(" Kill, membership "); err != nil || !slices.Equal(got, []string{"kill", "membership"}) {
		t.Errorf("parse: %v %v", got, err)
	}
	if _, err := ParseFaultClasses("kill,,pause"); err == nil {
		t.Error("an empty class was accepted")
	}
	if got, err := ParseFaultClasses(""); got != nil || err != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}

func TestBaseID(t *testing.T) {
	for id, want := range map[string]string{"node2": "node2", "node2-r1": "node2", "node2-r13": "node2", "node2-rx": "node2-rx", "node-r": "node-r", "a-b": "a-b"} {
		if got := baseID(id); got != want {
			t.Errorf("baseID(%q) = %q, want %q", id, got, want)
		}
	}
}

func status(node, state, leader string, term uint64) *restarea.ClusterStatus {
	return &restarea.ClusterStatus{NodeID: node, State: state, LeaderID: leader, Term: term}
}

// Only a node's claim to lead counts: a follower still naming the old
// leader after its term rose is not a second leader.
func TestTermLogTwoLeaders(t *testing.T) {
	l := newTermLog()
	l.record([]*restarea.ClusterStatus{status("n1", "leader", "n1", 2), status("n2", "follower", "n1", 2), nil}, 1)
	l.record([]*restarea.ClusterStatus{status("n1", "follower", "n1", 3), status("n2", "leader", "n2", 3), status("n3", "candidate", "", 4)}, 2)
	if vs := l.violations(); len(vs) != 0 || l.terms() != 2 {
		t.Fatalf("violations %v, terms %d", vs, l.terms())
	}
	l.record([]*restarea.ClusterStatus{status("n3", "leader", "n3", 3)}, int64(3*time.Second))
	vs := l.violations()
	if len(vs) != 1 || vs[0].Kind != VTwoLeaders || !strings.Contains(vs[0].Detail, "term 3 had leaders [n2 n3]") {
		t.Fatalf("violations %+v", vs)
	}
}

// checkMembers wants every node to list exactly the given voters.
func TestCheckMembers(t *testing.T) {
	serve := func(self string, ids ...string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := restarea.ClusterStatus{NodeID: self, State: "follower"}
			for _, id := range ids {
				suffrage := "voter"
				if strings.HasSuffix(id, "?") {
					id, suffrage = strings.TrimSuffix(id, "?"), "nonvoter"
				}
				st.Members = append(st.Members, restarea.Member{ID: id, Suffrage: suffrage})
			}
			json.NewEncoder(w).Encode(map[string]any{"data": st})
		}))
	}
	good := serve("a", "a", "b", "c")
	defer good.Close()
	stale := serve("b", "a", "b", "c", "old")
	defer stale.Close()
	learner := serve("c", "a", "b", "c?")
	defer learner.Close()
	ctx := context.Background()
	hc := &http.Client{Timeout: time.Second}
	if vs := checkMembers(ctx, hc, []string{good.URL, good.URL}, "", []string{"c", "b", "a"}, time.Second); len(vs) != 0 {
		t.Errorf("converged members: %v", vs)
	}
	vs := checkMembers(ctx, hc, []string{good.URL, stale.URL, learner.URL}, "", []string{"a", "b", "c"}, 2*time.Second)
	if len(vs) != 2 || vs[0].Kind != VMembership || *vs[0].Node != 1 || !strings.Contains(vs[0].Detail, "old") || !strings.Contains(vs[1].Detail, "nonvoter") {
		t.Errorf("violations %+v", vs)
	}
}

// Membership changes of three node processes under load, each through
// the admin API and --join: a node replaced under its id, the leader
// removed and rejoined, a follower removed, wiped and rejoined under a
// new id, two nodes added and removed again. Afterwards no
// acknowledged post is lost or duplicated, the history is
// linearizable, no term had two leaders and every node lists the same
// three members, the wiped follower under its new id.
func TestMembershipLocal(t *testing.T) {
	rep, _ := runLocal(t, 4*time.Minute, Config{
		Workers: 4, Duration: 28 * time.Second, FaultEvery: 5 * time.Second, Seed: 1, Faults: []string{ClassMembership},
		ProgressEvery: 5 * time.Second,
	})
	for _, v := range rep.Violations {
		t.Errorf("violation: %+v", v)
	}
	kinds := map[string]int{}
	for _, f := range rep.Faults {
		kinds[f.Kind]++
		if f.Error != "" {
			t.Errorf("%s of %v: %s", f.Kind, f.Nodes, f.Error)
		}
		if f.Kind == GrowShrink && len(f.Nodes) != growNodes {
			t.Errorf("grow-shrink started %v", f.Nodes)
		}
	}
	if len(kinds) != 4 {
		t.Errorf("faults %v, want the four membership kinds", kinds)
	}
	renamed := slices.ContainsFunc(rep.Members, func(id string) bool { return strings.Contains(id, "-r") })
	if len(rep.Members) != 3 || !renamed {
		t.Errorf("members after healing %v, want three with a new id among them", rep.Members)
	}
	if rep.Linearizable != "yes" || rep.Acknowledged < 20 || rep.LeaderTerms < 2 {
		t.Errorf("linearizable %s, %d acknowledged, %d terms with a leader", rep.Linearizable, rep.Acknowledged, rep.LeaderTerms)
	}
}
