package node

import (
	"errors"
	"math"
	"runtime"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/cluster"
	"github.com/restarea/restarea/internal/diskwatch"
	"github.com/restarea/restarea/internal/raftmetrics"
	"github.com/restarea/restarea/transport"
)

type metrics struct {
	posts        *prometheus.CounterVec
	applyLatency prometheus.Histogram
	batchSize    prometheus.Histogram
	batchSeconds prometheus.Histogram
	forwardBatch prometheus.Histogram
	expired      prometheus.Counter
	// clockClamped counts commands this node stamped, as leader, with the
	// measured cluster time because its wall clock was ahead of it.
	clockClamped prometheus.Counter
	// clockRefused counts commands this node refused to stamp, as a
	// leader without a measure whose clock the voters did not confirm.
	clockRefused prometheus.Counter
	// clockDisagreements counts the times this node's clock started to
	// disagree with the cluster's.
	clockDisagreements prometheus.Counter
	// expireLarge counts expiry passes that removed a large share of the
	// store (each also logged).
	expireLarge prometheus.Counter
	snapshots   *prometheus.CounterVec
	// corruption counts damaged bytes found in the data directory, by
	// file (the node stops at the first).
	corruption *prometheus.CounterVec
	reg        *prometheus.Registry
	// raftErr is why raft's own metrics are missing, if they are.
	raftErr error
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		reg: reg,
		posts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "restarea_posts_total",
			Help: "Post attempts answered by this node, by outcome (created, replayed or an error code) and channel.",
		}, []string{"outcome", "channel"}),
		applyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "restarea_raft_apply_seconds",
			Help:    "Time from proposing a command on the leader to its result.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "restarea_fsm_batch_size",
			Help:    "Log entries applied per state-machine transaction.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "restarea_fsm_apply_seconds",
			Help:    "Time to apply one batch to the state file (one transaction).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		forwardBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "restarea_forward_batch_size",
			Help:    "Commands per request a follower forwarded to the leader.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_expired_total",
			Help: "Entries and tombstones removed by retention (on the leader that proposed it).",
		}),
		clockClamped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_clock_clamped_total",
			Help: "Commands this node stamped, as leader, with the measured cluster time instead of its wall clock, which was ahead of it.",
		}),
		clockRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_clock_refused_total",
			Help: "Commands this node refused (503) as a just-started leader whose clock, ahead of the last replicated time, a majority of voters did not confirm.",
		}),
		clockDisagreements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_clock_disagreements_total",
			Help: "Times this node's wall clock started to disagree with the cluster's time by more than the tolerance.",
		}),
		expireLarge: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_expire_large_passes_total",
			Help: "Expiry passes that removed more than a tenth of the stored entries (each is logged at WARN).",
		}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "restarea_snapshots_total",
			Help: "Raft snapshots written on this node (its own, and those a leader installed), by outcome: persisted or failed.",
		}, []string{"outcome"}),
		corruption: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "restarea_corruption_detected_total",
			Help: "Times this node found bytes in its data directory whose checksum did not match, by file (raft.db, state.db, ...); it stops at the first (docs/disasters.md).",
		}, []string{"file"}),
	}
	if c, err := raftmetrics.Collector(); err != nil {
		m.raftErr = err
	} else {
		reg.MustRegister(c)
	}
	reg.MustRegister(m.snapshots, m.posts, m.applyLatency, m.batchSize, m.batchSeconds, m.forwardBatch, m.expired, m.clockClamped, m.clockRefused, m.clockDisagreements, m.expireLarge, m.corruption,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observeBatch(size int, d time.Duration) {
	m.batchSize.Observe(float64(size))
	m.batchSeconds.Observe(d.Seconds())
}

func (m *metrics) countPost(ch restarea.Channel, res restarea.PostResult, err error) {
	outcome := "created"
	switch {
	case err != nil:
		outcome = string(restarea.ErrorCode(err))
		var e *restarea.Error
		if !errors.As(err, &e) {
			outcome = "internal"
		}
	case res.Replayed:
		outcome = "replayed"
	}
	m.posts.WithLabelValues(outcome, string(ch)).Inc()
}

// watchRaft exports raft's state and indexes, the time since the leader
// was last heard from and the data directory's disk space, read when
// scraped.
func (m *metrics) watchRaft(n *Node) {
	if m.raftErr != nil {
		n.log.Warn("raft's own metrics are not on /metrics", "err", m.raftErr)
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(
		gauge("restarea_clock_skew_seconds", "This node's wall clock minus the cluster time it measures (the replicated clock carried forward by its monotonic clock); 0 until measured.", func() float64 {
			skew, known := n.clock.skew()
			if !known {
				return 0
			}
			return skew.Seconds()
		}),
		gauge("restarea_raft_state", "Raft state: 0 follower, 1 candidate, 2 leader, 3 shutdown.", func() float64 {
			return float64(n.raft.State())
		}),
		gauge("restarea_raft_is_leader", "1 when this node is the leader.", func() float64 {
			if n.raft.State() == raft.Leader {
				return 1
			}
			return 0
		}),
		gauge("restarea_raft_term", "Current raft term.", func() float64 { return float64(n.raft.CurrentTerm()) }),
		gauge("restarea_raft_commit_index", "Highest log index known committed.", func() float64 { return float64(n.raft.CommitIndex()) }),
		gauge("restarea_fsm_applied_index", "Highest log index applied to the state file.", func() float64 { return float64(n.fsm.AppliedIndex()) }),
		gauge("restarea_entries", "Entries stored (questions and replies, hidden ones included).", func() float64 {
			c, _ := n.fsm.Count()
			return float64(c)
		}),
		gauge("restarea_raft_last_contact_seconds", "Seconds since this node last heard from a leader: 0 on the leader, +Inf before the first contact.", func() float64 {
			if n.raft.State() == raft.Leader {
				return 0
			}
			t := n.raft.LastContact()
			if t.IsZero() {
				return math.Inf(1)
			}
			return time.Since(t).Seconds()
		}),
		diskCollector{dir: n.cfg.DataDir,
			free: prometheus.NewDesc("restarea_data_dir_free_bytes", "Bytes free to the node on the file system of its data directory.", nil, nil),
			size: prometheus.NewDesc("restarea_data_dir_size_bytes", "Size in bytes of the file system of the data directory.", nil, nil),
		},
	)
}

// diskCollector reports the disk space of the data directory's file
// system; nothing when it cannot be measured.
type diskCollector struct {
	dir        string
	free, size *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (d diskCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.free; ch <- d.size }

// Collect implements prometheus.Collector.
func (d diskCollector) Collect(ch chan<- prometheus.Metric) {
	free, size, err := diskwatch.Space(d.dir)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(d.free, prometheus.GaugeValue, float64(free))
	ch <- prometheus.MustNewConstMetric(d.size, prometheus.GaugeValue, float64(size))
}

// negotiatedCollector exports Stats.Established, whose protocol label
// takes whatever versions peers negotiated.
type negotiatedCollector struct {
	mux  *transport.Mux
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c negotiatedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c negotiatedCollector) Collect(ch chan<- prometheus.Metric) {
	for k, v := range c.mux.Stats().Established {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(v), k.Direction, strconv.Itoa(int(k.Protocol)))
	}
}

// watchCluster exports the cluster port's connection counters and the
// signed-request refusals, read when scraped.
func (m *metrics) watchCluster(mux *transport.Mux, g *cluster.Guard) {
	for _, reason := range transport.RefusalReasons {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "restarea_cluster_conn_refused_total",
			Help:        "Connections to the cluster port closed before raft or the internal channel saw them, by reason (auth: wrong proof of the cluster secret; protocol: no or a foreign greeting; tls; timeout; io; capacity: all handshake slots taken; source: the slots one source may hold taken; unaccepted; version: the peer shares no raft-port protocol version with this node, counted for accepted and dialed connections alike).",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(mux.Stats().Refused[reason]) }))
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "restarea_cluster_conn_pending",
			Help: "Connections to the cluster port still in their handshake (TLS, kind byte, proof of the secret).",
		}, func() float64 { return float64(mux.Stats().Pending) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "restarea_cluster_dial_auth_failures_total",
			Help: "Outgoing cluster connections abandoned because the peer did not prove the cluster secret or refused this node's proof.",
		}, func() float64 { return float64(mux.Stats().DialAuthFailed) }),
	)
	m.reg.MustRegister(negotiatedCollector{mux, prometheus.NewDesc("restarea_cluster_conn_established_total",
		"Authenticated connections on the cluster port, accepted (direction=in) or dialed (out), by the raft-port protocol version they negotiated (1: release v0.1.0's handshake; see transport.ProtocolMin and ProtocolMax).",
		[]string{"direction", "protocol"}, nil)})
	requests := func(reason string, f func(cluster.GuardStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "restarea_cluster_requests_refused_total",
			Help:        "Signed cluster requests (internal channel and public join/peer) refused, by reason (unauthenticated, replayed, too_large).",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(f(g.Stats())) })
	}
	m.reg.MustRegister(
		requests("unauthenticated", func(s cluster.GuardStats) uint64 { return s.Unauthenticated }),
		requests("replayed", func(s cluster.GuardStats) uint64 { return s.Replayed }),
		requests("too_large", func(s cluster.GuardStats) uint64 { return s.TooLarge }),
	)
}

// registerBuildInfo exports the build a node runs as the constant gauge
// restarea_build_info{version,commit,go_version} 1, the Prometheus
// convention for joining a build onto any series (and for seeing, during
// a rolling upgrade, which node runs which release).
func registerBuildInfo(reg prometheus.Registerer, version, commit string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "restarea_build_info",
		Help:        "The build this node runs; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "go_version": runtime.Version()},
	})
	g.Set(1)
	reg.MustRegister(g)
}
