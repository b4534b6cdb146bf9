package node

import (
	"context"
	"path/filepath"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/search"
)

var _ restarea.SearchService = (*Node)(nil)

// openSearch opens the node's own search index, DATA-DIR/search: derived
// from the applied state, never replicated, rebuilt when missing or
// behind (package search).
func (n *Node) openSearch() error {
	var err error
	n.search, err = search.Open(search.Config{
		Dir: filepath.Join(n.cfg.DataDir, "search"), State: n.fsm, Logger: n.log, Registerer: n.reg,
		// A damaged index is rebuilt, not fatal: it is derived from the
		// state (internal/search/verify.go).
		Damaged: func() { n.met.corruption.WithLabelValues("search index").Inc() },
	})
	n.searchGate = search.NewGate(search.GateConfig{
		Concurrency: n.cfg.SearchConcurrency, PerSource: n.cfg.SearchPerSourceConcurrency,
		Rate: n.cfg.SearchRatePerSource, Registerer: n.reg,
	})
	return err
}

// Search runs a full-text search over this node's public entries. Its
// cost is bounded before it runs: the query's terms and depth are checked
// first (400 naming q or cursor), then the gate admits it for q.Source
// (429 over the source's rate or share, 503 with no slot free), and only
// then does it wait for the state and run.
func (n *Node) Search(ctx context.Context, q restarea.SearchQuery) (restarea.SearchPage, error) {
	if _, err := search.Check(q); err != nil {
		return restarea.SearchPage{}, err
	}
	leave, err := n.searchGate.Enter(ctx, q.Source)
	if err != nil {
		return restarea.SearchPage{}, err
	}
	defer leave()
	if err := n.localBarrier(ctx); err != nil {
		return restarea.SearchPage{}, err
	}
	p, err := n.search.Search(ctx, q)
	for i := range p.Results {
		p.Results[i].SetURLs(n.PublicURL())
	}
	return p, err
}
