package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/restarea/restarea"
)

// The attacks of `restarea bench --attacks`: what one anonymous client
// could do to a public node (issue 26's table), each sent to a node of its
// own while another client, from another address, reads at a steady pace.
// The figures are the node's, measured from outside (/proc): peak resident
// memory above its level before the attack, CPU seconds during it, and the
// other client's p50 during the attack against its p50 just before.

// Source addresses on loopback: the attacker, the other client, and the
// seeder (a trusted proxy, so that each seeded post is its own source and
// no per-source limit slows the seeding).
const (
	attackerIP = "127.0.0.1"
	otherIP    = "127.0.0.2"
	seederIP   = "127.0.0.3"
)

// AttackOptions configures RunAttacks.
type AttackOptions struct {
	// Binary is the node to attack (this binary, or an older build for a
	// before/after comparison).
	Binary string
	// Dir holds the nodes' data directories and logs.
	Dir string
	// Quick seeds less and attacks briefly: a smoke test.
	Quick bool
	// Only runs the attacks named (all when empty).
	Only []string
	Logf func(format string, a ...any)
}

// AttackFigure is what one attack did to its node.
type AttackFigure struct {
	Attack      string         `json:"attack"`
	What        string         `json:"what"`
	Requests    int64          `json:"requests"`
	Statuses    map[string]int `json:"statuses"`
	MaxAnswer   int64          `json:"max_answer_bytes"`
	RSSBefore   int64          `json:"rss_before_bytes"`
	RSSPeak     int64          `json:"rss_peak_bytes"`
	CPUSeconds  float64        `json:"cpu_seconds"`
	Seconds     float64        `json:"seconds"`
	IdleP50     time.Duration  `json:"other_p50_idle_ns"`
	AttackP50   time.Duration  `json:"other_p50_attack_ns"`
	OtherErrors int            `json:"other_errors"`
	// Note is the attack's own figure: raft.db growth, log lines written,
	// handshake slots held.
	Note string `json:"note,omitempty"`
}

// attack is one entry of the table: how to seed its node and what to send.
type attack struct {
	name, what string
	seed       func(ctx context.Context, n *attackNode) error
	run        func(ctx context.Context, n *attackNode, f *AttackFigure) error
}

// RunAttacks runs the attacks, one fresh node each, and returns their figures.
func RunAttacks(ctx context.Context, opts AttackOptions) ([]AttackFigure, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	scale := attackScale{questions: 200, replies: 500, searchEntries: 10_000, attackFor: 15 * time.Second, idleFor: 3 * time.Second}
	if opts.Quick {
		scale = attackScale{questions: 20, replies: 40, searchEntries: 500, attackFor: 3 * time.Second, idleFor: time.Second}
	}
	var out []AttackFigure
	for _, a := range attacks(scale) {
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, a.name) {
			continue
		}
		opts.Logf("attack %s: %s", a.name, a.what)
		f, err := runAttack(ctx, opts, scale, a)
		if err != nil {
			return out, fmt.Errorf("attack %s: %w", a.name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

type attackScale struct {
	questions, replies, searchEntries int
	attackFor, idleFor                time.Duration
}

func runAttack(ctx context.Context, opts AttackOptions, sc attackScale, a attack) (AttackFigure, error) {
	f := AttackFigure{Attack: a.name, What: a.what, Statuses: map[string]int{}}
	n, err := startAttackNode(ctx, opts.Binary, filepath.Join(opts.Dir, a.name))
	if err != nil {
		return f, err
	}
	defer n.close()
	if a.seed != nil {
		opts.Logf("  seeding")
		if err := a.seed(ctx, n); err != nil {
			return f, fmt.Errorf("seed: %w", err)
		}
	}
	// The other client reads the home page's API at a steady pace, from
	// its own address, through the idle phase and the attack.
	other := newOtherClient(n.url)
	otherCtx, stopOther := context.WithCancel(ctx)
	otherDone := make(chan struct{})
	go func() { defer close(otherDone); other.run(otherCtx) }()
	if err := waitFor(ctx, sc.idleFor); err != nil {
		stopOther()
		return f, err
	}
	f.IdleP50 = other.p50Since(0)
	mark := other.count()
	before, _ := ReadMemory(n.pid)
	f.RSSBefore, f.RSSPeak = before.RSSBytes, before.RSSBytes
	cpu0 := processCPU(n.pid)

	// Sample the node's memory while the attack runs.
	sampleCtx, stopSample := context.WithCancel(ctx)
	sampled := make(chan int64, 1)
	go func() {
		peak := before.RSSBytes
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := ReadMemory(n.pid); err == nil && m.RSSBytes > peak {
				peak = m.RSSBytes
			}
			select {
			case <-sampleCtx.Done():
				sampled <- peak
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	attackCtx, cancel := context.WithTimeout(ctx, sc.attackFor)
	err = a.run(attackCtx, n, &f)
	cancel()
	f.Seconds = time.Since(start).Seconds()
	f.CPUSeconds = processCPU(n.pid) - cpu0
	stopSample()
	f.RSSPeak = <-sampled
	stopOther()
	<-otherDone
	f.AttackP50 = other.p50Since(mark)
	f.OtherErrors = other.errors()
	opts.Logf("  %d requests in %.1fs, statuses %v, peak RSS +%.0f MiB, CPU %.1fs, other p50 %.1f → %.1f ms %s",
		f.Requests, f.Seconds, f.Statuses, float64(f.RSSPeak-f.RSSBefore)/(1<<20), f.CPUSeconds,
		ms(f.IdleP50), ms(f.AttackP50), f.Note)
	if err != nil && ctx.Err() == nil {
		return f, err
	}
	return f, nil
}

// waitFor lets a phase of the bench run for d.
func waitFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// attackNode is one `restarea serve` process under attack: the public
// limits of a default node, an admin token, and the seeder trusted as a
// proxy.
type attackNode struct {
	url, raftAddr, dataDir, logPath, token string
	pid                                    int
	// thread is the long thread the thread-view attack reads.
	thread string
	close  func()
}

func startAttackNode(ctx context.Context, binary, dir string) (*attackNode, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	raftAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var tok [24]byte
	rand.Read(tok[:])
	n := &attackNode{url: "http://" + httpAddr, raftAddr: raftAddr, dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "node.log"), token: base64.RawURLEncoding.EncodeToString(tok[:])}
	// A default public node, but for two things the seeding needs: the
	// seeder is a trusted proxy, and the site-wide limit does not stop it.
	args := []string{"serve", "--data-dir", n.dataDir, "--http-addr", httpAddr, "--raft-addr", raftAddr,
		"--admin-token", n.token, "--trusted-proxies", seederIP + "/32", "--rate-global", "1000000/1h"}
	pid, stop, err := serveProcess(ctx, binary, args, n.logPath, n.url)
	if err != nil {
		return nil, err
	}
	n.pid, n.close = pid, func() { stop() }
	return n, nil
}

// clientFrom is an HTTP client whose connections come from ip.
func clientFrom(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns},
		// Answers may be large; the attack reads them through io.Discard.
		Timeout: 2 * time.Minute,
	}
}

// otherClient reads GET /api/v1/threads?limit=5 every 50 ms and keeps
// each latency, so that phases can be compared.
type otherClient struct {
	url  string
	hc   *http.Client
	mu   sync.Mutex
	lat  []time.Duration
	errs int
}

func newOtherClient(url string) *otherClient {
	return &otherClient{url: url, hc: clientFrom(otherIP, 1)}
}

func (o *otherClient) run(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.url+"/api/v1/threads?limit=5", nil)
		resp, err := o.hc.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		d := time.Since(start)
		o.mu.Lock()
		if err != nil || resp.StatusCode != http.StatusOK {
			if ctx.Err() == nil {
				o.errs++
			}
		} else {
			o.lat = append(o.lat, d)
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (o *otherClient) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.lat)
}

func (o *otherClient) errors() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.errs
}

// p50Since is the median of the latencies after the first from.
func (o *otherClient) p50Since(from int) time.Duration {
	o.mu.Lock()
	lat := slices.Clone(o.lat[min(from, len(o.lat)):])
	o.mu.Unlock()
	slices.Sort(lat)
	return percentile(lat, 0.5)
}

// processCPU is pid's user and system CPU time in seconds, from
// /proc/PID/stat (0 when it cannot be read).
func processCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields count from after its ")".
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ, 100 on Linux
}

// errAttackDone ends a worker's goroutine: its attack sent all it sends.
var errAttackDone = errors.New("the attack sent everything")

// worker runs fn in conc goroutines until ctx ends, counting requests and
// answers into f.
func worker(ctx context.Context, conc int, f *AttackFigure, fn func(ctx context.Context) (status int, size int64, err error)) {
	var mu sync.Mutex
	var reqs atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				status, size, err := fn(ctx)
				if err == errAttackDone {
					return
				}
				key := strconv.Itoa(status)
				switch {
				case err != nil && ctx.Err() != nil:
					if status == 0 && size == 0 {
						key = "cut" // in flight when the attack ended
					} else {
						key += "-cut"
					}
				case err != nil:
					key = "error"
				}
				reqs.Add(1)
				mu.Lock()
				f.Statuses[key]++
				f.MaxAnswer = max(f.MaxAnswer, size)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	f.Requests += reqs.Load()
}

// send does one request and reads the whole answer into io.Discard.
func send(ctx context.Context, hc *http.Client, method, url string, body []byte, header http.Header) (int, int64, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}

// seedPosts posts count entries through the seeder, each from its own
// forwarded source, conc at a time; made returns the i-th post.
func seedPosts(ctx context.Context, url string, count, conc int, made func(i int) restarea.PostRequest) ([]string, error) {
	hc := clientFrom(seederIP, conc)
	ids := make([]string, count)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= count || ctx.Err() != nil || firstErr.Load() != nil {
					return
				}
				b, _ := json.Marshal(made(i))
				h := http.Header{"Content-Type": {"application/json"},
					"X-Forwarded-For": {fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/entries", bytes.NewReader(b))
				req.Header = h
				resp, err := hc.Do(req)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				var out struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					firstErr.CompareAndSwap(nil, fmt.Errorf("seed post %d: status %d", i, resp.StatusCode))
					return
				}
				ids[i] = out.Data.ID
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	return ids, ctx.Err()
}

// emoji is a body of 20,000 emoji: the longest a body may be, and 80,000
// bytes of UTF-8 (more again as JSON \u escapes in some encoders).
var emoji = strings.Repeat("\U0001F600", 20_000)

// commonWords are the query of the search attack: words most posts hold.
var commonWords = strings.Fields(`the a an and or of to in on for with is are was were be been it this that these those
from by at as not but if then than so can could will would should may might must do does did have has had
what which who when where why how all any each every some more most other such only own same very just also
into over after before between under again further once here there about`)

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// WriteAttackTable prints the figures, one attack a row.
func WriteAttackTable(w io.Writer, figs []AttackFigure) {
	fmt.Fprintf(w, "%-17s %9s %-28s %11s %13s %8s %22s  %s\n",
		"attack", "requests", "answers", "max answer", "peak RSS +MiB", "CPU s", "other p50 ms idle→att", "note")
	for _, f := range figs {
		keys := make([]string, 0, len(f.Statuses))
		for k := range f.Statuses {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var answers []string
		for _, k := range keys {
			answers = append(answers, fmt.Sprintf("%s×%d", k, f.Statuses[k]))
		}
		ratio := 0.0
		if f.IdleP50 > 0 {
			ratio = float64(f.AttackP50) / float64(f.IdleP50)
		}
		fmt.Fprintf(w, "%-17s %9d %-28s %11s %13.0f %8.1f %9.1f→%.1f (%.1f×)  %s\n",
			f.Attack, f.Requests, strings.Join(answers, " "), byteSize(f.MaxAnswer),
			float64(f.RSSPeak-f.RSSBefore)/(1<<20), f.CPUSeconds, ms(f.IdleP50), ms(f.AttackP50), ratio, f.Note)
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
