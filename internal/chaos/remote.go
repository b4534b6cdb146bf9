package chaos

import (
	"fmt"
	"strings"
)

// Remote is a Target run by someone else, given by its nodes' URLs. It
// takes no faults unless a driver is given.
type Remote struct {
	urls   []string
	token  string
	driver FaultDriver
}

var _ Target = (*Remote)(nil)

// NewRemote returns a target for the nodes at urls (trailing slashes are
// dropped); driver may be nil.
func NewRemote(urls []string, adminToken string, driver FaultDriver) *Remote {
	r := &Remote{token: adminToken, driver: driver}
	for _, u := range urls {
		r.urls = append(r.urls, strings.TrimRight(u, "/"))
	}
	return r
}

// Name implements Target.
func (r *Remote) Name() string { return fmt.Sprintf("nodes %s", strings.Join(r.urls, ",")) }

// URLs implements Target.
func (r *Remote) URLs() []string { return r.urls }

// AdminToken implements Target.
func (r *Remote) AdminToken() string { return r.token }

// Faults implements Target.
func (r *Remote) Faults() FaultDriver { return r.driver }

// Close implements Target: the cluster is not ours to stop.
func (r *Remote) Close() error { return nil }
