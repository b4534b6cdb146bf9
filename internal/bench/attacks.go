package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/restarea/restarea"
)

// attacks is issue 26's table, one attack a row, sized by sc.
func attacks(sc attackScale) []attack {
	return []attack{
		{
			name: "mcp-batch",
			what: "JSON-RPC batches of 20 list_threads calls without MCP-Protocol-Version, 2 at a time, on a board of large questions",
			seed: emojiBoard(sc),
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				return listBatches(ctx, n, f, 20, 50)
			},
		},
		{
			name: "mcp-batch-max",
			what: "the largest batch still admitted: 8 list_threads calls of limit 200, 2 at a time, on the same board",
			seed: emojiBoard(sc),
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				return listBatches(ctx, n, f, 8, 200)
			},
		},
		{
			name: "search",
			what: "80 common words (48 stop words, 32 kept) past the last result, limit 50, 8 at once from one address",
			seed: proseBoard(sc),
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				return searches(ctx, n, f, append(slices.Clone(commonWords[:48]), contentWords[:32]...), sc.searchEntries)
			},
		},
		{
			name: "search-max",
			what: "the costliest search still admitted: 32 common words at offset 950, limit 50, 8 at once from one address",
			seed: proseBoard(sc),
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				return searches(ctx, n, f, contentWords[:32], 950)
			},
		},
		{
			name: "thread-view",
			what: "40 clients that ask for a long thread's page, .md and feed and never read the answer",
			seed: func(ctx context.Context, n *attackNode) error {
				ids, err := seedPosts(ctx, n.url, 1, 1, func(int) restarea.PostRequest { return question("the question") })
				if err != nil {
					return err
				}
				n.thread = ids[0]
				_, err = seedPosts(ctx, n.url, sc.replies, 4, func(int) restarea.PostRequest { return reply(emoji, n.thread) })
				return err
			},
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				return stalledReaders(ctx, n, 40, []string{"/threads/" + n.thread, "/threads/" + n.thread + ".md", "/threads/" + n.thread + "/feed.atom"}, f)
			},
		},
		{
			name: "posts-over-limit",
			what: "posts of 80 KB from one address past its per-source limit",
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				before := ReadDisk(n.dataDir).RaftLogBytes
				hc := clientFrom(attackerIP, 4)
				h := http.Header{"Content-Type": {"application/json"}}
				var mu sync.Mutex
				sent := 0
				worker(ctx, 4, f, func(ctx context.Context) (int, int64, error) {
					mu.Lock()
					if sent >= 893 {
						mu.Unlock()
						return 0, 0, errAttackDone
					}
					sent++
					mu.Unlock()
					b, _ := json.Marshal(question(emoji))
					return send(ctx, hc, http.MethodPost, n.url+"/api/v1/entries", b, h)
				})
				f.Note = fmt.Sprintf("raft.db grew %.1f MiB", float64(ReadDisk(n.dataDir).RaftLogBytes-before)/(1<<20))
				return nil
			},
		},
		{
			name: "console-refusals",
			what: "cross-site POSTs to /admin/settings and sign-ins with a wrong token, from one address",
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				linesBefore := logLines(n.logPath)
				hc := clientFrom(attackerIP, 4)
				cookie, csrf, err := loginForm(ctx, hc, n.url)
				if err != nil {
					return err
				}
				cross := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"https://evil.example"},
					"Sec-Fetch-Site": {"cross-site"}}
				login := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Cookie": {cookie}}
				var i int64
				var mu sync.Mutex
				worker(ctx, 4, f, func(ctx context.Context) (int, int64, error) {
					mu.Lock()
					i++
					k := i
					mu.Unlock()
					if k > 6000 {
						return 0, 0, errAttackDone
					}
					if k%2 == 0 {
						return send(ctx, hc, http.MethodPost, n.url+"/admin/settings", []byte("writes_disabled=on"), cross)
					}
					form := url.Values{"csrf": {csrf}, "token": {"not-the-token"}}.Encode()
					return send(ctx, hc, http.MethodPost, n.url+"/admin/login", []byte(form), login)
				})
				f.Note = fmt.Sprintf("%d log lines written", logLines(n.logPath)-linesBefore)
				return nil
			},
		},
		{
			name: "raft-port",
			what: "1,100 silent sockets to the raft port from one address",
			run: func(ctx context.Context, n *attackNode, f *AttackFigure) error {
				var conns []net.Conn
				defer func() {
					for _, c := range conns {
						c.Close()
					}
				}()
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerIP)}, Timeout: 5 * time.Second}
				for range 1100 {
					c, err := d.DialContext(ctx, "tcp", n.raftAddr)
					f.Requests++
					if err != nil {
						f.Statuses["error"]++
						continue
					}
					f.Statuses["open"]++
					conns = append(conns, c)
				}
				pending, source := metricValue(ctx, n.url, "restarea_cluster_conn_pending"),
					metricValue(ctx, n.url, `restarea_cluster_conn_refused_total{reason="source"}`)
				f.Note = fmt.Sprintf("handshake slots held %s of 1024, refused by source %s", pending, source)
				<-ctx.Done()
				return nil
			},
		},
	}
}

// emojiBoard seeds sc.questions questions of 20,000 emoji.
func emojiBoard(sc attackScale) func(context.Context, *attackNode) error {
	return func(ctx context.Context, n *attackNode) error {
		_, err := seedPosts(ctx, n.url, sc.questions, 4, func(int) restarea.PostRequest { return question(emoji) })
		return err
	}
}

// proseBoard seeds sc.searchEntries questions of plain English.
func proseBoard(sc attackScale) func(context.Context, *attackNode) error {
	return func(ctx context.Context, n *attackNode) error {
		_, err := seedPosts(ctx, n.url, sc.searchEntries, 8, func(i int) restarea.PostRequest {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			q := question(prose(r, 120))
			q.Title = prose(r, 8)
			return q
		})
		return err
	}
}

// listBatches sends JSON-RPC batches of calls list_threads calls of limit
// limit to /mcp without MCP-Protocol-Version, 2 at a time.
func listBatches(ctx context.Context, n *attackNode, f *AttackFigure, calls, limit int) error {
	var batch []map[string]any
	for i := range calls {
		batch = append(batch, map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "list_threads", "arguments": map[string]any{"limit": limit}}})
	}
	body, _ := json.Marshal(batch)
	hc := clientFrom(attackerIP, 2)
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	worker(ctx, 2, f, func(ctx context.Context) (int, int64, error) {
		return send(ctx, hc, http.MethodPost, n.url+"/mcp", body, h)
	})
	return nil
}

// searches sends queries of words at the given offset, limit 50, 8 at
// once from one address.
func searches(ctx context.Context, n *attackNode, f *AttackFigure, words []string, offset int) error {
	hc := clientFrom(attackerIP, 8)
	cursor := base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(offset)))
	q := url.Values{"q": {strings.Join(words, " ")}, "cursor": {cursor}, "limit": {"50"}}
	worker(ctx, 8, f, func(ctx context.Context) (int, int64, error) {
		return send(ctx, hc, http.MethodGet, n.url+"/api/v1/search?"+q.Encode(), nil, nil)
	})
	return nil
}

// stalledReaders has conc clients that each send a GET for one of paths
// on a new connection every half second and never read an answer: every
// connection stays open, unread, until the attack ends (or the node
// closes it).
func stalledReaders(ctx context.Context, n *attackNode, conc int, paths []string, f *AttackFigure) error {
	host := strings.TrimPrefix(n.url, "http://")
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerIP)}, Timeout: 5 * time.Second}
			t := time.NewTicker(500 * time.Millisecond)
			defer t.Stop()
			for {
				c, err := d.DialContext(ctx, "tcp", host)
				status := "sent"
				if err == nil {
					if tc, ok := c.(*net.TCPConn); ok {
						tc.SetReadBuffer(4096) // a small window: the node's writes block soon
					}
					_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", paths[i%len(paths)], host)
				}
				if err != nil {
					status = "error"
				}
				mu.Lock()
				f.Requests++
				f.Statuses[status]++
				if c != nil {
					conns = append(conns, c)
				}
				mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// loginForm gets the console's sign-in form: its cookie and CSRF field.
func loginForm(ctx context.Context, hc *http.Client, base string) (cookie, csrf string, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/admin/login", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	m := csrfField.FindSubmatch(buf.Bytes())
	if m == nil || len(resp.Cookies()) == 0 {
		return "", "", fmt.Errorf("the sign-in form has no CSRF field or cookie (status %d)", resp.StatusCode)
	}
	c := resp.Cookies()[0]
	return c.Name + "=" + c.Value, string(m[1]), nil
}

// logLines counts the lines of a node's log file.
func logLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// metricValue reads one series' value from a node's /metrics ("?" when
// absent).
func metricValue(ctx context.Context, base, series string) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := clientFrom(otherIP, 1).Do(req)
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return v
		}
	}
	return "?"
}

// contentWords are words a search keeps (no stop words), common in the
// seeded prose: the costliest admitted search asks for 32 of them.
var contentWords = strings.Fields(`raft snapshot leader replay request bbolt index cluster timeout agent
post reply thread question answer node follower commit apply write read search page cursor limit
source retry journal client server error status memory disk network partition clock term vote`)

// prose is n words of plain English: common words, and words a search
// keeps.
func prose(r *rand.Rand, n int) string {
	words := make([]string, n)
	for i := range words {
		if r.IntN(3) == 0 {
			words[i] = contentWords[r.IntN(len(contentWords))]
		} else {
			words[i] = commonWords[r.IntN(len(commonWords))]
		}
	}
	return strings.Join(words, " ")
}
