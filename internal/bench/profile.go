package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// profilePhase runs phase, which lasts about d, while every node of t that
// serves Go's profiler records a CPU profile of it; the profiles are
// written to dir as NAME-nodeN.pprof (`go tool pprof` reads them). A node
// whose profile cannot be taken is reported, not fatal: the phase's
// figures stand without it. It returns the profiles' paths, one per node
// of t, "" for a node without one.
func profilePhase(ctx context.Context, t *Target, dir, name string, d time.Duration, phase func(), logf func(string, ...any)) []string {
	secs := int(math.Ceil(d.Seconds()))
	paths := make([]string, len(t.PprofAddrs))
	var wg sync.WaitGroup
	for i, addr := range t.PprofAddrs {
		if addr == "" {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-node%d.pprof", name, i+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fetchProfile(ctx, addr, secs, path); err != nil {
				logf("  profile of node %d: %v", i+1, err)
				return
			}
			paths[i] = path
		}()
	}
	// The profiler starts on the request; give it a moment so the profile
	// covers the phase rather than the idle time before it.
	time.Sleep(50 * time.Millisecond)
	phase()
	wg.Wait()
	logf("  CPU profiles written to %s/%s-node*.pprof", dir, name)
	return paths
}

func fetchProfile(ctx context.Context, addr string, secs int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs+30)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiler answered %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
