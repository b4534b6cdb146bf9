// Package raftmetrics carries hashicorp/raft's (and raft-boltdb's) own
// metrics to a node's /metrics, through go-metrics' process-wide sink,
// under Prometheus' conventions (snake_case, seconds, _total on
// counters; the table in names.go) and, deprecated for one release,
// under the names go-metrics gives them.
package raftmetrics

import (
	"fmt"
	"sync"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// raftSink is the process's sink. Raft reports through go-metrics' global sink, which is
// process-wide: it is installed once, by the first node to start, and its
// collector is registered in every node's registry. A process normally
// runs one node, so its /metrics shows that node's raft. In a process
// with several nodes (tests, the in-process chaos target) the raft_*
// series are those of all of them together; raft names only the peer
// (peer_id), never the local node.
var raftSink struct {
	once sync.Once
	conv prometheus.Collector
	err  error
}

// Collector returns the process's raft metrics collector, installing
// go-metrics' global sink on first use. Each series raft reports appears
// under its new name (Rename) and under its old one, whose help starts
// "Deprecated: use <new name>"; a series the node already exports under
// restarea_ appears only under its old name. The compat packages follow
// raft's own build (armon/go-metrics by default, hashicorp/go-metrics with
// the hashicorpmetrics tag), so the sink is the one raft reports to.
func Collector() (prometheus.Collector, error) {
	raftSink.once.Do(func() {
		// The sink registers itself in the registry given, which the
		// converter gathers; each node's registry registers the converter.
		source := prometheus.NewRegistry()
		sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
			Registerer: source,
			Name:       "restarea_raft_metrics_sink",
			// Raft's series never expire: counters and summary counts stay
			// monotonic between rare events (snapshots, elections). A
			// gauge keeps the last value raft set.
			Expiration: 0,
		})
		if err != nil {
			raftSink.err = fmt.Errorf("raft metrics sink: %w", err)
			return
		}
		conf := gometrics.DefaultConfig("")
		// Keys are raft's own ("raft.commitTime" → raft_commitTime); the
		// host is the scrape target's, and Go's runtime is already on
		// /metrics.
		conf.EnableHostname, conf.EnableHostnameLabel, conf.EnableServiceLabel = false, false, false
		conf.EnableRuntimeMetrics = false
		conf.TimerGranularity = time.Millisecond
		if _, err := gometrics.NewGlobal(conf, sink); err != nil {
			raftSink.err = fmt.Errorf("raft metrics: %w", err)
			return
		}
		raftSink.conv = converter{source: source}
	})
	return raftSink.conv, raftSink.err
}
