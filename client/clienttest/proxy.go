// Package clienttest provides a fault-injecting reverse proxy for testing
// rest.area clients against a real node: per request it can forward, lose
// the answer after forwarding, answer 429 or 503 itself, cut the answer
// mid-body, or hold the request open. Faults are scripted per request, in
// order, so tests are deterministic. It listens on loopback only.
//
// It is public on purpose, the one test-support package that is: programs
// built on package client can test their own handling of lost answers,
// 429s and cut-off bodies with it, as client's own tests do. The rest of
// the project's test helpers are internal (internal/testkit).
package clienttest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Mode is what the proxy does with one request.
type Mode string

// The modes. "After forward" modes let the node decide (and store) the
// request before the fault, so the client cannot know it was stored.
const (
	// Forward passes the request and the answer through.
	Forward Mode = "forward"
	// DropAnswer forwards, then closes the client's connection without
	// answering.
	DropAnswer Mode = "drop-answer"
	// TooManyRequests answers 429 rate_limited with Retry-After: 1 without
	// forwarding.
	TooManyRequests Mode = "429"
	// Unavailable answers 503 unavailable with Retry-After: 1 without
	// forwarding.
	Unavailable Mode = "503"
	// WritesDisabled answers 503 writes_disabled with Retry-After: 1
	// without forwarding.
	WritesDisabled Mode = "503-writes-disabled"
	// UnavailableAfterForward forwards, then answers 503 unavailable with
	// Retry-After: 1 instead of the node's answer.
	UnavailableAfterForward Mode = "forward-503"
	// CutBody forwards, then sends the node's status and headers and half
	// of its body, and closes the connection.
	CutBody Mode = "cut-body"
	// Hold keeps the request open without forwarding until the client goes
	// away or the proxy closes.
	Hold Mode = "hold"
	// HoldAfterForward forwards, then holds the answer back until the
	// client goes away or the proxy closes.
	HoldAfterForward Mode = "forward-hold"
)

// Proxy is a scripted fault proxy in front of one node.
type Proxy struct {
	target string
	srv    *httptest.Server
	fwd    *http.Client
	done   chan struct{}
	held   chan struct{}

	mu        sync.Mutex
	posts     []Mode
	reads     []Mode
	seen      []Mode
	onRequest func(*http.Request)
	closeOnce sync.Once
}

// New starts a proxy on loopback in front of the node at target (a base
// URL) and closes it when the test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{
		target: target,
		fwd:    &http.Client{Timeout: 30 * time.Second},
		done:   make(chan struct{}),
		held:   make(chan struct{}, 16),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// URL returns the proxy's base URL.
func (p *Proxy) URL() string { return p.srv.URL }

// ScriptPosts sets the modes of the next POST requests, one per request;
// once they are used up, posts are forwarded.
func (p *Proxy) ScriptPosts(modes ...Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.posts = append(p.posts[:0], modes...)
}

// ScriptReads sets the modes of the next GET requests, as ScriptPosts.
func (p *Proxy) ScriptReads(modes ...Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads = append(p.reads[:0], modes...)
}

// OnRequest sets a function called with every request as it arrives,
// before the proxy acts on it.
func (p *Proxy) OnRequest(f func(*http.Request)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onRequest = f
}

// Seen returns the mode applied to each POST so far, in order.
func (p *Proxy) Seen() []Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Mode(nil), p.seen...)
}

// Held receives a value each time a Hold or HoldAfterForward request
// starts being held (for HoldAfterForward: after the node answered it).
func (p *Proxy) Held() <-chan struct{} { return p.held }

// Close releases held requests and stops the proxy.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		close(p.done)
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
}

func (p *Proxy) next(r *http.Request) Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onRequest != nil {
		p.onRequest(r)
	}
	list := &p.reads
	if r.Method == http.MethodPost {
		list = &p.posts
	}
	m := Forward
	if len(*list) > 0 {
		m = (*list)[0]
		*list = (*list)[1:]
	}
	if r.Method == http.MethodPost {
		p.seen = append(p.seen, m)
	}
	return m
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	switch m := p.next(r); m {
	case TooManyRequests:
		refuse(w, http.StatusTooManyRequests, "rate_limited")
	case Unavailable:
		refuse(w, http.StatusServiceUnavailable, "unavailable")
	case WritesDisabled:
		refuse(w, http.StatusServiceUnavailable, "writes_disabled")
	case Hold:
		p.hold(r)
	default:
		resp, data, err := p.forward(r, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		switch m {
		case DropAnswer:
			hangUp(w, nil)
		case UnavailableAfterForward:
			refuse(w, http.StatusServiceUnavailable, "unavailable")
		case CutBody:
			var head bytes.Buffer
			fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", resp.StatusCode, http.StatusText(resp.StatusCode))
			resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
			resp.Header.Set("Connection", "close")
			resp.Header.Write(&head)
			head.WriteString("\r\n")
			head.Write(data[:len(data)/2])
			hangUp(w, head.Bytes())
		case HoldAfterForward:
			p.hold(r)
		default:
			for k, vs := range resp.Header {
				w.Header()[k] = vs
			}
			w.WriteHeader(resp.StatusCode)
			w.Write(data)
		}
	}
}

// forward sends the request to the node and reads its whole answer.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequest(r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = r.Header.Clone()
	resp, err := p.fwd.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

// hold blocks until the client goes away or the proxy closes.
func (p *Proxy) hold(r *http.Request) {
	select {
	case p.held <- struct{}{}:
	default: // nobody is counting holds; do not block on it
	}
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
}

// refuse answers status with an error body in the API's shape.
func refuse(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":"injected by the test proxy"}}`+"\n", code)
}

// hangUp writes raw bytes straight to the connection (nil: nothing) and
// closes it, so the client sees a lost or cut answer.
func hangUp(w http.ResponseWriter, raw []byte) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if raw != nil {
		buf.Write(raw)
		buf.Flush()
	}
	conn.Close()
}
