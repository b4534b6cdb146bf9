package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// finalize calls the finalize route and waits until every node shows a
// cluster_version above the one it showed before.
func (up *upgrader) finalize(ctx context.Context) error {
	r := up.r
	before := clusterVersions(ctx, up.hc, up.urls, up.token)
	st := UpgradeStep{Step: StepFinalize, Node: -1, StartNs: r.hist.Now()}
	r.log.Info("upgrade step", "step", StepFinalize, "cluster_version_before", before)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), up.pace.finalize)
	version, err := callFinalize(fctx, up.hc, up.urls, up.token)
	cancel()
	var after []string
	if err == nil {
		st.Version = version
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), up.pace.versions)
		after, err = waitVersionsRose(vctx, up.hc, up.urls, up.token, before)
		cancel()
	}
	st.EndNs = r.hist.Now()
	st.ReadyMs = msBetween(st.StartNs, st.EndNs)
	if err != nil {
		st.Error = err.Error()
	} else {
		r.log.Info("upgrade step done", "step", StepFinalize, "cluster_version", version, "cluster_version_after", after,
			"after", time.Duration(st.EndNs-st.StartNs).Round(time.Millisecond))
	}
	up.mu.Lock()
	up.rep.Steps = append(up.rep.Steps, st)
	up.rep.ClusterVersionBefore, up.rep.ClusterVersionAfter = before, after
	up.mu.Unlock()
	return err
}

// callFinalize asks the nodes in turn to finalize the upgrade until one
// answers 200, and returns the cluster_version of the status it answers
// with. 404 means
// the binary has no such route; 409 (members behind) and 503 are retried
// until ctx ends, then reported with the last answer.
func callFinalize(ctx context.Context, hc *http.Client, urls []string, token string) (string, error) {
	last := errors.New("not asked")
	for try := 0; try < maxPolls; try++ {
		u := urls[try%len(urls)] + FinalizePath
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		status, env, err := restDo(cctx, hc, http.MethodPost, u, token, nil)
		cancel()
		switch {
		case err != nil:
			last = err
		case status == http.StatusOK:
			// The answer says what changed (from, to) and carries the
			// cluster status, whose cluster_version is the one in force.
			var st struct {
				Status struct {
					ClusterVersion json.RawMessage `json:"cluster_version"`
				} `json:"status"`
			}
			if err := json.Unmarshal(env.Data, &st); err != nil || len(st.Status.ClusterVersion) == 0 {
				return "", fmt.Errorf("finalize: POST %s answered 200 without status.cluster_version: %.300s", u, env.Data)
			}
			return versionText(st.Status.ClusterVersion), nil
		case status == http.StatusNotFound:
			return "", fmt.Errorf("finalize: route not available (POST %s answered 404 %s)", u, describe(env))
		case status == http.StatusConflict:
			last = fmt.Errorf("finalize: refused, members behind: %s", describe(env))
		case status == http.StatusServiceUnavailable:
			last = fmt.Errorf("finalize: POST %s answered 503 %s", u, describe(env))
		default:
			return "", fmt.Errorf("finalize: POST %s answered %d %s", u, status, describe(env))
		}
		if !sleep(ctx, 500*time.Millisecond) {
			break
		}
	}
	return "", last
}

// clusterVersions reads cluster_version from every node's GET
// /api/v1/cluster ("" where a node does not answer or has none).
func clusterVersions(ctx context.Context, hc *http.Client, urls []string, token string) []string {
	out := make([]string, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var st struct {
				ClusterVersion json.RawMessage `json:"cluster_version"`
			}
			if getData(cctx, hc, u+"/api/v1/cluster", token, &st) == nil {
				out[i] = versionText(st.ClusterVersion)
			}
		}()
	}
	wg.Wait()
	return out
}

// waitVersionsRose polls every node until its cluster_version is above
// before's, and returns the versions last seen.
func waitVersionsRose(ctx context.Context, hc *http.Client, urls []string, token string, before []string) ([]string, error) {
	var now []string
	for range maxPolls {
		now = clusterVersions(ctx, hc, urls, token)
		var behind []string
		for i := range urls {
			if !versionRose(before[i], now[i]) {
				behind = append(behind, fmt.Sprintf("node %d: %q → %q", i, before[i], now[i]))
			}
		}
		if len(behind) == 0 {
			return now, nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return now, fmt.Errorf("finalize: cluster_version did not rise on every node: %s", strings.Join(behind, ", "))
		}
	}
	return now, errors.New("finalize: cluster_version polls exhausted")
}

// versionText is a JSON version as text: a string's contents, a number's
// digits, "" for none or null.
func versionText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if t := strings.TrimSpace(string(raw)); t != "null" {
		return t
	}
	return ""
}

// versionRose reports whether version after is above before: numbers
// compare as numbers, dotted versions ("1.2", "v0.2.0") part by part; no
// version before and one after counts as a rise.
func versionRose(before, after string) bool {
	if after == "" {
		return false
	}
	if before == "" {
		return true
	}
	b := strings.Split(strings.TrimPrefix(before, "v"), ".")
	a := strings.Split(strings.TrimPrefix(after, "v"), ".")
	for k := range max(len(a), len(b)) {
		x, y := part(b, k), part(a, k)
		if x < 0 || y < 0 {
			return false // not a version this check can compare
		}
		if y != x {
			return y > x
		}
	}
	return false
}

// part returns the k-th numeric part of a version, 0 past its end, -1
// when it is not a number.
func part(parts []string, k int) int64 {
	if k >= len(parts) {
		return 0
	}
	n, err := strconv.ParseInt(parts[k], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
