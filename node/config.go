package node

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/buildinfo"
	"github.com/restarea/restarea/internal/search"
	"github.com/restarea/restarea/transport"
)

// Config is everything a node needs. Zero values take the defaults of
// `restarea serve` with no flags (see Defaults).
type Config struct {
	DataDir string
	// HTTPAddr is the address of the node's public HTTP port, already
	// bound by whoever serves it (internal/server): the node's own URL
	// derives from it.
	HTTPAddr string
	// RaftAddr is the raft and internal-channel listener; RaftAdvertise is
	// the address other nodes dial ("" → RaftAddr).
	RaftAddr      string
	RaftAdvertise string
	// JoinURLs are HTTP URLs of existing members (or, with BootstrapExpect,
	// of the peers to form a cluster with). Empty: a fresh node bootstraps
	// a cluster of one.
	JoinURLs []string
	// BootstrapExpect, with JoinURLs, lets this many fresh nodes form a
	// cluster together, once.
	BootstrapExpect int
	// ClusterSecret authenticates every connection on the raft port (both
	// ends prove they hold it) and signs every internal request; required
	// as soon as there is more than one node, and for a raft port beyond
	// loopback without TLS.
	ClusterSecret []byte
	// TLS, when set, turns on mutual TLS for raft and the internal channel.
	TLS *tls.Config
	// HTTPS says the public port serves HTTPS (internal/server terminates
	// TLS there): the node's own URL, and so the default AdvertiseURL and
	// PublicURL, then start with https://.
	HTTPS bool
	// PublicClientTLS verifies other nodes' public ports when this node
	// calls them over https:// (joining, forming a cluster, the console's
	// view of the members); nil → the system's roots.
	PublicClientTLS *tls.Config
	// Faults, when set, lets tests and chaos runs isolate this node.
	Faults *transport.Faults
	// ProtocolVersions is the range of raft-port protocol versions this
	// node announces; zero is this release's (transport.ThisRelease). Any
	// other range is for tests that run nodes "releases apart" (restarea
	// serve --test-protocol-versions, refused without
	// --allow-test-versions).
	ProtocolVersions transport.VersionRange
	// FSMFault deliberately breaks the state machine (tests of the chaos
	// checker only).
	FSMFault fsm.Fault
	// SyncState fsyncs the state file on every applied batch. Off by
	// default: the raft log is the durable record, and a state file torn
	// by a machine crash is rebuilt from the snapshot and the log (see
	// fsm/durability.go).
	SyncState bool
	// StateCommitInterval lets the batches applied within that long share
	// one state-file transaction (fsm/group.go); reads commit it first, so
	// they still see every applied batch. 0 → the default (50 ms);
	// negative commits every batch on its own.
	StateCommitInterval time.Duration
	// ScrubRate bounds the bytes per second the background scrub reads
	// while it checks every value of the state file against its checksum
	// (fsm.Scrub). 0 → the default (4 MiB/s); negative turns it off.
	ScrubRate int64
	// ScrubInterval is the least time from the start of one scrub pass to
	// the start of the next. 0 → the default (24 h).
	ScrubInterval time.Duration
	// BootID replaces the machine's boot id (tests simulate a machine
	// restart with it); nil → the real one.
	BootID func() string
	// DiskHooks lets tests make the data directory's disk slow (see
	// DiskHooks); nil in production.
	DiskHooks *DiskHooks

	// NodeID names this node in the cluster; "" → generated once and kept
	// in DataDir/node-id.
	NodeID string
	// PublicURL is the base of entry urls, the same on every node.
	PublicURL string
	// AdvertiseURL is this node's own HTTP base URL as other nodes and
	// operators reach it ("" → http://HTTPAddr, https:// with HTTPS).
	AdvertiseURL string

	// RatePerSource and RateGlobal seed the replicated settings; an
	// operator's change through the admin API takes precedence.
	RatePerSource      restarea.Limit
	RateGlobal         restarea.Limit
	Retention          time.Duration
	TombstoneRetention time.Duration
	// ExpireInterval is how often the leader proposes expiry.
	ExpireInterval time.Duration

	// SearchRatePerSource is each source's rate of searches on this node
	// (a token bucket: Count at once, refilled at Count per Window; zero →
	// 30/m). SearchConcurrency is how many searches run at once (0 →
	// GOMAXPROCS) and SearchPerSourceConcurrency how many of one source
	// may be in flight (0 → 2). Local to the node, like its search index
	// (see search.Gate).
	SearchRatePerSource        restarea.Limit
	SearchConcurrency          int
	SearchPerSourceConcurrency int

	// ApplyTimeout bounds one write through raft; past it the answer is
	// 503 unavailable (outcome unknown).
	ApplyTimeout time.Duration
	// LeaderWait bounds how long a write waits for a leader to exist.
	LeaderWait time.Duration

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	SnapshotThreshold  uint64
	SnapshotInterval   time.Duration
	TrailingLogs       uint64

	// Now is the wall clock the leader stamps commands with (tests inject
	// one).
	Now func() time.Time
	// Monotonic is time elapsed since a fixed point, never stepped; nil →
	// the process's monotonic clock. The node measures the cluster's time
	// with it, so that a step of Now is detected (see clock.go). Tests that
	// model time passing advance it with Now; tests that model a step of
	// the wall clock move Now alone.
	Monotonic func() time.Duration
	// ClockTolerance is how far a wall clock may disagree with the
	// cluster time the node measures before the node stamps the measure
	// instead, reports the disagreement and, as leader, hands over.
	ClockTolerance time.Duration

	Logger *slog.Logger
	// RaftLogOutput, when set, receives hashicorp/raft's own log lines
	// (Info and above) as JSON lines of the node's shape, with
	// component=raft; nil → they go through Logger like the node's own
	// (io.Discard silences them).
	RaftLogOutput io.Writer
	// Version and Commit are the build this node runs, reported in its
	// MCP handshake and its cluster status; empty → this binary's own
	// (internal/buildinfo). They are fields rather than read inside the
	// node so that an in-process test can run nodes of different builds
	// side by side, as a rolling upgrade does.
	Version string
	Commit  string
	// ClusterVersionMax is the newest cluster version this node announces
	// and applies; 0 → fsm.ClusterVersionMax. Only tests set it
	// (--test-cluster-version-max), to play a later or an earlier release.
	ClusterVersionMax int
	// InitialClusterVersion is the cluster version a new cluster forms at:
	// its first leader raises the version to it before anything else, as a
	// finalize-upgrade would, when every member knows it (0 → the newest
	// every member knows). 1 forms a cluster that nodes of releases up to
	// v0.1.0 can still join, until an operator finalizes.
	InitialClusterVersion int
	// AutoFinalizeUpgrade lets the leader finalize an upgrade by itself,
	// on its timer, once every member knows a newer cluster version
	// (--auto-finalize-upgrade). Off: only an operator finalizes.
	AutoFinalizeUpgrade bool
}

// Defaults returns the configuration of `restarea serve` with no flags.
func Defaults() Config {
	return Config{
		DataDir:            "./data",
		HTTPAddr:           "127.0.0.1:8080",
		RaftAddr:           "127.0.0.1:8300",
		RatePerSource:      restarea.Limit{Count: 30, WindowSeconds: 60},
		RateGlobal:         restarea.Limit{Count: 2000, WindowSeconds: 3600},
		Retention:          90 * 24 * time.Hour,
		TombstoneRetention: 30 * 24 * time.Hour,
		ExpireInterval:     time.Minute,
		ApplyTimeout:       10 * time.Second,
		LeaderWait:         5 * time.Second,
		HeartbeatTimeout:   1000 * time.Millisecond,
		ElectionTimeout:    1000 * time.Millisecond,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		SnapshotThreshold:  8192,
		SnapshotInterval:   2 * time.Minute,
		TrailingLogs:       10240,
		ClockTolerance:     10 * time.Second,

		StateCommitInterval: 50 * time.Millisecond,
		ScrubRate:           4 << 20,
		ScrubInterval:       24 * time.Hour,
	}
}

// withDefaults fills every zero field from Defaults.
func (c Config) withDefaults() Config {
	d := Defaults()
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	set(&c.DataDir, d.DataDir)
	set(&c.HTTPAddr, d.HTTPAddr)
	set(&c.RaftAddr, d.RaftAddr)
	if c.RatePerSource == (restarea.Limit{}) {
		c.RatePerSource = d.RatePerSource
	}
	if c.RateGlobal == (restarea.Limit{}) {
		c.RateGlobal = d.RateGlobal
	}
	if c.SearchRatePerSource == (restarea.Limit{}) {
		c.SearchRatePerSource = search.DefaultSearchRate
	}
	setD(&c.Retention, d.Retention)
	setD(&c.TombstoneRetention, d.TombstoneRetention)
	setD(&c.ExpireInterval, d.ExpireInterval)
	setD(&c.ApplyTimeout, d.ApplyTimeout)
	setD(&c.LeaderWait, d.LeaderWait)
	setD(&c.HeartbeatTimeout, d.HeartbeatTimeout)
	setD(&c.ElectionTimeout, d.ElectionTimeout)
	setD(&c.LeaderLeaseTimeout, d.LeaderLeaseTimeout)
	setD(&c.SnapshotInterval, d.SnapshotInterval)
	setD(&c.ClockTolerance, d.ClockTolerance)
	setD(&c.StateCommitInterval, d.StateCommitInterval)
	setD(&c.ScrubInterval, d.ScrubInterval)
	if c.ScrubRate == 0 {
		c.ScrubRate = d.ScrubRate
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = d.SnapshotThreshold
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = d.TrailingLogs
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Version == "" {
		c.Version = buildinfo.Version()
	}
	if c.Commit == "" {
		c.Commit = buildinfo.Commit()
	}
	if c.ClusterVersionMax == 0 {
		c.ClusterVersionMax = fsm.ClusterVersionMax
	}
	return c
}

func (c Config) validate() error {
	if c.ClusterVersionMax < 1 {
		return fmt.Errorf("cluster version max %d: want at least 1", c.ClusterVersionMax)
	}
	if c.InitialClusterVersion < 0 || c.InitialClusterVersion > c.ClusterVersionMax {
		return fmt.Errorf("initial cluster version %d: want 0 (the newest every member knows) up to %d, the newest this binary knows",
			c.InitialClusterVersion, c.ClusterVersionMax)
	}
	if err := c.RatePerSource.Validate("rate-per-source"); err != nil {
		return fmt.Errorf("%s", restarea.ErrorMessage(err))
	}
	if err := c.RateGlobal.Validate("rate-global"); err != nil {
		return fmt.Errorf("%s", restarea.ErrorMessage(err))
	}
	if err := c.SearchRatePerSource.Validate("search-rate-per-source"); err != nil {
		return fmt.Errorf("%s", restarea.ErrorMessage(err))
	}
	if c.SearchConcurrency < 0 || c.SearchPerSourceConcurrency < 0 {
		return fmt.Errorf("search-concurrency and search-concurrency-per-source must not be negative")
	}
	if c.PublicURL != "" && !(strings.HasPrefix(c.PublicURL, "http://") || strings.HasPrefix(c.PublicURL, "https://")) {
		return fmt.Errorf("public-url %q must start with http:// or https://", c.PublicURL)
	}
	if (len(c.JoinURLs) > 0 || c.BootstrapExpect > 1) && len(c.ClusterSecret) == 0 {
		return fmt.Errorf("a cluster of more than one node needs --cluster-secret (the same on every node)")
	}
	if c.BootstrapExpect > 1 && len(c.JoinURLs) == 0 {
		return fmt.Errorf("--bootstrap-expect needs --join with the other nodes' URLs")
	}
	if len(c.ClusterSecret) > 0 && len(c.ClusterSecret) < 16 {
		return fmt.Errorf("--cluster-secret must be at least 16 bytes")
	}
	if c.ScrubInterval < 0 {
		return fmt.Errorf("--scrub-interval must not be negative")
	}
	if c.ClockTolerance < 0 {
		return fmt.Errorf("--clock-tolerance must not be negative")
	}
	if c.Retention < 0 || c.TombstoneRetention < 0 {
		return fmt.Errorf("retention must not be negative")
	}
	return nil
}
