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
	})
	return err
}

// Search runs a full-text search over this node's public entries.
func (n *Node) Search(ctx context.Context, q restarea.SearchQuery) (restarea.SearchPage, error) {
	if err := n.localBarrier(ctx); err != nil {
		return restarea.SearchPage{}, err
	}
	p, err := n.search.Search(ctx, q)
	for i := range p.Results {
		p.Results[i].SetURLs(n.PublicURL())
	}
	return p, err
}
