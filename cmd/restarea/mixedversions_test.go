package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// procNode is one node process of the mixed cluster.
type procNode struct {
	id, url, log string
}

// metricValues reads the samples of one metric from a node's /metrics,
// keyed by their label text (`direction="in",protocol="1"`).
func metricValues(t *testing.T, url, name string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", url, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimPrefix(line, name+"{"), "} ")
		v, _ := strconv.ParseFloat(value, 64)
		out[labels] = v
	}
	return out
}

// A cluster of one release-v0.1.0 node and two nodes of this tree forms,
// takes posts through every node and stores them on every node; the
// connections to and from the old node negotiate protocol version 1, the
// ones between the new nodes version 2.
func TestMixedClusterWithReleaseV010(t *testing.T) {
	if testing.Short() {
		t.Skip("builds release v0.1.0 from git: not in -short")
	}
	_, old := testkit.PreviousRelease(t) // v0.1.0, which speaks only protocol 1
	cur := testkit.Binary(t)
	dir := t.TempDir()
	const adminToken = "mixed-admin-token-0123456789abcdef"

	nodes := make([]procNode, 3)
	raftAddrs := make([]string, 3)
	var urls []string
	for i := range nodes {
		nodes[i] = procNode{id: fmt.Sprintf("node%d", i+1), url: "http://" + testkit.FreeAddr(t), log: filepath.Join(dir, fmt.Sprintf("node%d.log", i+1))}
		raftAddrs[i] = testkit.FreeAddr(t)
		urls = append(urls, nodes[i].url)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				b, _ := os.ReadFile(n.log)
				t.Logf("%s log (last 4 KiB):\n%s", n.id, tail(b, 4096))
			}
		}
	})
	for i, n := range nodes {
		bin := cur
		if i == 0 {
			bin = old
		}
		// Only flags release v0.1.0 knows.
		args := []string{"serve", "--node-id", n.id, "--data-dir", filepath.Join(dir, n.id),
			"--http-addr", strings.TrimPrefix(n.url, "http://"), "--advertise-url", n.url,
			"--raft-addr", raftAddrs[i], "--admin-token", adminToken,
			"--join", strings.Join(urls, ","), "--bootstrap-expect", "3",
			"--cluster-secret", string(testnode.Secret), "--log-level", "info"}
		logf, err := os.Create(n.log)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr, cmd.Env = logf, logf, cleanEnv()
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", n.id, err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
	}
	for _, n := range nodes {
		testkit.WaitOK(t, 60*time.Second, n.url+"/readyz")
	}

	// Make a new node leader, so that the new nodes talk to each other
	// (the leader replicates to both, the other new node forwards to it)
	// whoever won the first election.
	leaderOf := func() (string, error) {
		var st struct {
			Data struct {
				LeaderID string `json:"leader_id"`
			} `json:"data"`
		}
		if err := getJSON(nodes[1].url+"/api/v1/cluster", &st); err != nil {
			return "", err
		}
		if st.Data.LeaderID == "" {
			return "", fmt.Errorf("no leader")
		}
		return st.Data.LeaderID, nil
	}
	testkit.Eventually(t, 60*time.Second, "node2 to lead", func() error {
		leader, err := leaderOf()
		if err != nil || leader == "node2" {
			return err
		}
		for _, n := range nodes {
			if n.id == leader {
				req, _ := http.NewRequest(http.MethodPost, n.url+"/api/v1/admin/cluster/leadership-transfer", strings.NewReader(`{"id":"node2"}`))
				req.Header.Set("Authorization", "Bearer "+adminToken)
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
		return fmt.Errorf("leader is %s", leader)
	})

	var ids []string
	for _, n := range nodes {
		q := testkit.Question("mixed cluster, posted through " + n.id)
		body, _ := json.Marshal(q)
		id := testkit.EventuallyValue(t, 30*time.Second, "post through "+n.id, func() (string, error) {
			resp, err := http.Post(n.url+"/api/v1/entries", "application/json", bytes.NewReader(body))
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			var out struct {
				Data struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode/100 != 2 || json.Unmarshal(b, &out) != nil || out.Data.ID == "" {
				return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
			}
			return out.Data.ID, nil
		})
		ids = append(ids, id)
	}
	for _, n := range nodes {
		for _, id := range ids {
			testkit.WaitOK(t, 30*time.Second, n.url+"/api/v1/threads/"+id)
		}
	}

	// The new nodes count their connections by the version negotiated.
	// Version 1 only ever comes from the old node, which speaks nothing
	// else; between the new nodes, node2 (the leader) dials node3 and
	// node3 forwards its post to node2, both in version 2.
	const established = "restarea_cluster_conn_established_total"
	in1, out1 := `direction="in",protocol="1"`, `direction="out",protocol="1"`
	in2, out2 := `direction="in",protocol="2"`, `direction="out",protocol="2"`
	testkit.Eventually(t, 30*time.Second, "the negotiated versions in the metrics", func() error {
		m2 := metricValues(t, nodes[1].url, established)
		m3 := metricValues(t, nodes[2].url, established)
		switch {
		case m2[out1]+m3[out1] == 0:
			return fmt.Errorf("no new node dialed the old one in version 1: node2 %v, node3 %v", m2, m3)
		case m2[in1] == 0:
			return fmt.Errorf("the old node's forwarded post did not reach node2 in version 1: %v", m2)
		case m2[out2] == 0 || m3[in2] == 0:
			return fmt.Errorf("node2 did not replicate to node3 in version 2: node2 %v, node3 %v", m2, m3)
		case m3[out2] == 0 || m2[in2] == 0:
			return fmt.Errorf("node3 did not forward to node2 in version 2: node2 %v, node3 %v", m2, m3)
		}
		for k := range m2 {
			if !strings.Contains(k, `protocol="1"`) && !strings.Contains(k, `protocol="2"`) {
				return fmt.Errorf("node2 negotiated an unexpected version: %v", m2)
			}
		}
		return nil
	})
	for _, n := range nodes[1:] {
		if v := metricValues(t, n.url, "restarea_cluster_conn_refused_total")[`reason="version"`]; v != 0 {
			t.Fatalf("%s refused %v connections for their version", n.id, v)
		}
	}
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
