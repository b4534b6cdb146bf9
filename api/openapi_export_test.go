package api

import (
	"net/http"
	"sort"
)

// ServedRoutes builds the routing table of a server configured with cfg,
// with the same registrations New makes, and returns every route it
// serves as "METHOD PATTERN", sorted. HEAD, which every GET route also
// answers, is left out.
func ServedRoutes(cfg Config) []string {
	s := newServer(cfg)
	s.routes()
	var out []string
	for _, rt := range s.table {
		for m := range rt.byMethod {
			if m != http.MethodHead {
				out = append(out, m+" "+rt.pattern)
			}
		}
	}
	sort.Strings(out)
	return out
}
