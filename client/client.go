package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/restarea/restarea"
)

// Client talks to a rest.area cluster. It is safe for concurrent use.
type Client struct {
	opts    Options
	servers []string
	journal *Journal
	// cur indexes servers: the one requests go to until it fails to
	// answer.
	cur atomic.Uint64
}

// New returns a client for opts. It checks that there is at least one
// server and that every server is an http(s) URL.
func New(opts Options) (*Client, error) {
	opts = opts.withDefaults()
	if len(opts.Servers) == 0 {
		return nil, errors.New("client: at least one server URL is required")
	}
	servers := make([]string, 0, len(opts.Servers))
	for _, s := range opts.Servers {
		s = strings.TrimRight(strings.TrimSpace(s), "/")
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("client: server %q: want an http:// or https:// URL", s)
		}
		servers = append(servers, s)
	}
	return &Client{opts: opts, servers: servers, journal: opts.Journal}, nil
}

// Servers returns the server URLs the client uses, in order.
func (c *Client) Servers() []string { return append([]string(nil), c.servers...) }

// server returns the server requests currently go to.
func (c *Client) server() string {
	return c.servers[c.cur.Load()%uint64(len(c.servers))]
}

// rotate moves to the next server after base failed to answer. A
// concurrent caller that already moved on is not moved again.
func (c *Client) rotate(base string) {
	i := c.cur.Load()
	if c.servers[i%uint64(len(c.servers))] == base {
		c.cur.CompareAndSwap(i, i+1)
	}
}

// answer is what one HTTP request produced. lost is set when there is no
// usable answer (connection failure, timeout, a cut or garbled body): the
// request may or may not have had its effect.
type answer struct {
	status     int
	data       json.RawMessage // the "data" member of a success
	err        *restarea.Error // the "error" member of a failure
	retryAfter time.Duration
	lost       error
	// unreachable is set when the server gave no HTTP answer at all
	// (refused, reset, timed out), so the next one should be tried.
	unreachable bool
}

// maxAnswerBytes caps the answers read: a page of 200 replies of 20,000
// characters each fits.
const maxAnswerBytes = 64 << 20

// do sends one request to base and reads the whole answer.
func (c *Client) do(ctx context.Context, base, method, path string, query url.Values, body []byte) answer {
	ctx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
	defer cancel()
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return answer{lost: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "restarea-client")
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return answer{lost: err, unreachable: true}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		// The status line arrived but the body was cut: the answer is lost
		// all the same.
		return answer{lost: fmt.Errorf("answer %d cut short: %w", resp.StatusCode, err)}
	}
	a := answer{status: resp.StatusCode, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Code    restarea.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	decodeErr := json.Unmarshal(raw, &env)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if decodeErr != nil || len(env.Data) == 0 {
			return answer{lost: fmt.Errorf("answer %d without a readable data member", resp.StatusCode)}
		}
		a.data = env.Data
	case decodeErr == nil && env.Error != nil && env.Error.Code != "":
		a.err = &restarea.Error{Code: env.Error.Code, Message: env.Error.Message, RetryAfter: a.retryAfter}
	default:
		// Not one of ours: a proxy or load balancer answered. Keep the
		// status; the message is the start of what it said.
		a.err = &restarea.Error{Code: "", Message: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, snippet(raw)), RetryAfter: a.retryAfter}
	}
	return a
}

func snippet(b []byte) string {
	r := []rune(strings.TrimSpace(string(b)))
	if len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return string(r)
}
