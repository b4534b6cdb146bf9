package localcluster

import (
	"io"
	"net"
	"sync"
)

// proxy sits in front of one node's cluster port. Every node dials its
// peers from its own loopback address, so the proxy knows which node a
// connection comes from and can refuse the pairs a partition separates —
// in both directions, since each node has its own proxy.
type proxy struct {
	ln     net.Listener
	target string
	// from maps a source IP to a node index.
	from    *sources
	mu      sync.Mutex
	blocked func(from int) bool
	conns   map[net.Conn]int // accepted connection → source node
	closed  bool
	wg      sync.WaitGroup
}

// sources maps a source IP to a node index; nodes added to a running
// cluster add their IP, which every proxy then knows.
type sources struct {
	mu sync.RWMutex
	m  map[string]int
}

func (s *sources) set(ip string, i int) {
	s.mu.Lock()
	s.m[ip] = i
	s.mu.Unlock()
}

func (s *sources) get(ip string) (int, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, ok := s.m[ip]
	return i, ok
}

func newProxy(listen, target string, from *sources) (*proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, from: from, conns: map[net.Conn]int{}, blocked: func(int) bool { return false }}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) source(c net.Conn) int {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return -1
	}
	if i, ok := p.from.get(host); ok {
		return i
	}
	return -1
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		src := p.source(c)
		p.mu.Lock()
		if p.closed || p.blocked(src) {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = src
		p.mu.Unlock()
		p.wg.Add(1)
		go p.pipe(c)
	}
}

func (p *proxy) pipe(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.Close()
	}()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	// When either side ends (or a partition cuts c), both end: raft and
	// HTTP never rely on half-closed connections.
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// setBlocked installs the rule for new connections and cuts existing
// ones that it forbids.
func (p *proxy) setBlocked(blocked func(from int) bool) {
	p.mu.Lock()
	p.blocked = blocked
	var cut []net.Conn
	for c, src := range p.conns {
		if blocked(src) {
			cut = append(cut, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cut {
		c.Close()
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[net.Conn]int{}
	p.mu.Unlock()
	p.ln.Close()
	for c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
