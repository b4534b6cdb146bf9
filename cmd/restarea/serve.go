package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/buildinfo"
	"github.com/restarea/restarea/internal/certs"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/node"
	"github.com/restarea/restarea/transport"
)

func init() {
	register("serve", "run a node (a single-node cluster with no flags)", runServe)
}

func runServe(args []string) int {
	d := node.Defaults()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dataDir := fs.String("data-dir", d.DataDir, "directory for the raft log, snapshots and state")
	httpAddr := fs.String("http-addr", d.HTTPAddr, "address for REST, MCP, pages and /metrics")
	raftAddr := fs.String("raft-addr", d.RaftAddr, "address for raft traffic between nodes")
	raftAdv := fs.String("raft-advertise", "", "raft address other nodes dial (default: --raft-addr)")
	nodeID := fs.String("node-id", "", "node id (default: generated once and kept in the data dir)")
	publicURL := fs.String("public-url", "", "base of entry urls, the same on every node (default: http://HTTP-ADDR, https:// with --http-tls-cert)")
	advURL := fs.String("advertise-url", "", "this node's own base URL as other nodes reach it (default: http://HTTP-ADDR, https:// with --http-tls-cert)")
	adminToken := fs.String("admin-token", "", "bearer token for /api/v1/admin/, at least 16 bytes (empty: admin API off)")
	adminTokenFile := fs.String("admin-token-file", "", "file holding the admin token (keeps it out of ps)")
	perSource := fs.String("rate-per-source", "30/m", "post attempts per source, e.g. 30/m")
	global := fs.String("rate-global", "2000/h", "new entries site-wide, e.g. 2000/h")
	searchRate := fs.String("search-rate-per-source", "30/m", "searches per source on this node: COUNT at once, refilled at COUNT per WINDOW, e.g. 30/m")
	searchConc := fs.Int("search-concurrency", 0, "searches running at once on this node (0: one per CPU, GOMAXPROCS); four times as many may wait up to 2s")
	searchConcSource := fs.Int("search-concurrency-per-source", 2, "searches of one source in flight at once on this node")
	retention := fs.String("retention", "90d", "how long entries are kept")
	tombRetention := fs.String("tombstone-retention", "30d", "how long deleted entries' request_ids are remembered")
	proxies := fs.String("trusted-proxies", "", "comma-separated IPs/CIDRs whose X-Forwarded-For is believed")
	origins := fs.String("allowed-origins", "", "comma-separated browser Origins, besides the node's own, allowed to post (REST) and to call /mcp")
	v6bits := fs.Int("ipv6-source-prefix", 64, "IPv6 clients are counted by this prefix length (1-128) for limits and connection caps")
	maxConns := fs.Int("max-connections", 4096, "cap on open connections to --http-addr (negative: none)")
	maxConnsSource := fs.Int("max-connections-per-source", 256, "cap on open connections from one source (trusted proxies exempt; negative: none)")
	maxExpensive := fs.Int("max-expensive-requests", server.DefaultMaxExpensive, "expensive requests (page, thread, feed, list and search reads, MCP calls) served at once; more wait up to 2 s, then 503 (negative: no bound)")
	maxExpensiveSource := fs.Int("max-expensive-requests-per-source", server.DefaultMaxExpensivePerSource, "expensive requests one source may have in flight; more get 429 (negative: as many as --max-expensive-requests)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	pprofAddr := fs.String("pprof-addr", "", "serve Go's /debug/pprof/ on this address (off when empty; keep it on loopback)")
	join := fs.String("join", "", "comma-separated URLs of cluster members to join (or, with --bootstrap-expect, to form a cluster with)")
	expect := fs.Int("bootstrap-expect", 0, "with --join: form a new cluster once this many nodes are up")
	secret := fs.String("cluster-secret", "", "shared secret (>= 16 bytes) that authenticates every raft-port connection and signs node-to-node requests (required for more than one node, and for --raft-addr beyond loopback without TLS)")
	secretFile := fs.String("cluster-secret-file", "", "file holding the cluster secret")
	tlsCert := fs.String("tls-cert", "", "PEM certificate for mutual TLS between nodes")
	tlsKey := fs.String("tls-key", "", "PEM key for --tls-cert")
	tlsCA := fs.String("tls-ca", "", "PEM CA that signs every node's certificate")
	httpCert := fs.String("http-tls-cert", "", "PEM certificate (leaf first, then its chain) for HTTPS on --http-addr; reloaded when the file changes")
	httpKey := fs.String("http-tls-key", "", "PEM key for --http-tls-cert")
	httpCA := fs.String("http-tls-ca", "", "PEM CA, besides the system's roots, that this node trusts for other nodes' https:// URLs (joining, the console)")
	heartbeat := fs.Duration("raft-heartbeat-timeout", d.HeartbeatTimeout, "raft heartbeat timeout (raise on slow or loaded machines)")
	election := fs.Duration("raft-election-timeout", d.ElectionTimeout, "raft election timeout")
	lease := fs.Duration("raft-leader-lease-timeout", d.LeaderLeaseTimeout, "how long a leader stays leader without reaching a quorum")
	snapThreshold := fs.Uint64("snapshot-threshold", d.SnapshotThreshold, "log entries between snapshots")
	trailing := fs.Uint64("trailing-logs", d.TrailingLogs, "log entries kept after a snapshot")
	clockTol := fs.Duration("clock-tolerance", d.ClockTolerance, "how far a node's wall clock may disagree with the cluster time it measures before, as leader, it stamps the measured time instead and hands leadership over")
	expireEvery := fs.Duration("expire-interval", d.ExpireInterval, "how often the leader proposes expiry")
	testClockFile := fs.String("test-clock-offset-file", "", "TESTS ONLY: run the wall clock ahead by the duration written in this file (needs --allow-test-clock)")
	allowTestClock := fs.Bool("allow-test-clock", false, "TESTS ONLY: allow --test-clock-offset-file; never on a production node")
	testVersions := fs.String("test-protocol-versions", "", "TESTS ONLY: announce raft-port protocol versions MIN-MAX instead of this release's, to test nodes releases apart (needs --allow-test-versions)")
	allowTestVersions := fs.Bool("allow-test-versions", false, "TESTS ONLY: allow --test-* version flags; never on a production node")
	testBootID := fs.String("test-boot-id-file", "", "TESTS ONLY: take the machine's boot id from this file, so a test can simulate a reboot by changing it (needs --allow-test-boot-id)")
	allowTestBootID := fs.Bool("allow-test-boot-id", false, "TESTS ONLY: allow --test-boot-id-file; never on a production node")
	initialCV := fs.Int("initial-cluster-version", 0, "the cluster version a new cluster forms at (0: the newest every member knows); 1 lets nodes of v0.1.0 join it until an upgrade is finalized (docs/upgrades.md)")
	autoFinalize := fs.Bool("auto-finalize-upgrade", false, "let the leader finalize an upgrade by itself (raise the cluster version) once every member runs a release that knows a newer one; after that, older releases can no longer start on this cluster's data or join it (docs/upgrades.md)")
	testCVMax := fs.Int("test-cluster-version-max", 0, "TESTS ONLY: announce and apply cluster versions up to this one instead of this release's, to play another release (needs --allow-test-versions)")
	syncState := fs.Bool("sync-state", false, "also fsync the state file on every applied batch (by default only the raft log is; a state file torn by a machine crash is rebuilt from snapshot and log)")
	commitEvery := fs.Duration("state-commit-interval", d.StateCommitInterval, "let the batches applied within this long share one state-file commit (reads commit first, so they still see every applied write); 0 commits every batch")
	scrubRate := fs.String("scrub-rate", "4MiB", "how fast the background scrub reads the state file to check every record against its checksum, per second (B, KiB, MiB, GiB); 0 turns it off")
	scrubEvery := fs.Duration("scrub-interval", d.ScrubInterval, "the least time from the start of one scrub pass over the whole state file to the start of the next")
	if !parseFlags(fs, args) {
		return 2
	}
	// From here on every line on stderr is the node's JSON, refusals of
	// the configuration too (docs/operating.md, "Logs").
	logger := jsonLogger(slog.LevelInfo)
	fail := func(format string, a ...any) int {
		logger.Error("restarea serve: bad configuration", "err", fmt.Sprintf(format, a...))
		return 2
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail("--log-level: %v", err)
	}
	logger = jsonLogger(level)
	slog.SetDefault(logger)
	// First, before anything else is logged: which build every later line
	// of this log comes from.
	logger.Info("restarea starting", "version", buildinfo.Version(), "commit", buildinfo.Commit(),
		"go", runtime.Version(), "os", runtime.GOOS, "arch", runtime.GOARCH)

	tuneGC()
	cfg := server.Config{Config: d}
	cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr, cfg.RaftAdvertise = *dataDir, *httpAddr, *raftAddr, *raftAdv
	cfg.NodeID, cfg.PublicURL, cfg.AdvertiseURL = *nodeID, *publicURL, *advURL
	cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SyncState = *snapThreshold, *trailing, *syncState
	if *commitEvery < 0 {
		return fail("--state-commit-interval: %v is negative (0 commits every batch)", *commitEvery)
	}
	cfg.StateCommitInterval = *commitEvery
	if *commitEvery == 0 {
		cfg.StateCommitInterval = -1
	}
	rate, rerr := parseByteRate(*scrubRate)
	if rerr != nil {
		return fail("--scrub-rate: %v", rerr)
	}
	if *scrubEvery <= 0 {
		return fail("--scrub-interval must be positive")
	}
	cfg.ScrubRate, cfg.ScrubInterval = rate, *scrubEvery
	if rate == 0 {
		cfg.ScrubRate = -1
	}
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = *heartbeat, *election, *lease
	cfg.Logger, cfg.Version, cfg.Commit = logger, buildinfo.Version(), buildinfo.Commit()
	cfg.IPv6SourceBits, cfg.MaxConns, cfg.MaxConnsPerSource = *v6bits, *maxConns, *maxConnsSource
	if *v6bits < 1 || *v6bits > 128 {
		return fail("--ipv6-source-prefix %d: want 1 to 128", *v6bits)
	}
	cfg.MaxExpensive, cfg.MaxExpensivePerSource = *maxExpensive, *maxExpensiveSource
	if *maxExpensive == 0 || *maxExpensiveSource == 0 {
		return fail("--max-expensive-requests and --max-expensive-requests-per-source must not be 0 (negative: no bound)")
	}
	if *maxConns == 0 || *maxConnsSource == 0 {
		return fail("--max-connections and --max-connections-per-source must not be 0 (negative: no cap)")
	}
	if *clockTol <= 0 || *expireEvery <= 0 {
		return fail("--clock-tolerance and --expire-interval must be positive")
	}
	cfg.ClockTolerance, cfg.ExpireInterval = *clockTol, *expireEvery
	if *testClockFile != "" {
		if !*allowTestClock {
			return fail("--test-clock-offset-file moves this node's clock for tests; it is refused without --allow-test-clock (never on a production node)")
		}
		c, err := newOffsetClock(*testClockFile)
		if err != nil {
			return fail("%v", err)
		}
		cfg.Now = c.Now
		logger.Warn("TEST CLOCK: this node's wall clock follows an offset file; it is for tests only", "file", *testClockFile)
	}
	if *testVersions != "" {
		if !*allowTestVersions {
			return fail("--test-protocol-versions makes this node announce raft-port protocol versions it does not speak, for tests; it is refused without --allow-test-versions (never on a production node)")
		}
		r, err := transport.ParseVersionRange(*testVersions)
		if err != nil {
			return fail("--test-protocol-versions: %v", err)
		}
		cfg.ProtocolVersions = r
		logger.Warn("TEST VERSIONS: this node announces raft-port protocol versions other than its release's; it is for tests only", "versions", r.String(), "release", transport.ThisRelease.String())
	}
	if *testBootID != "" {
		if !*allowTestBootID {
			return fail("--test-boot-id-file replaces this machine's boot id for tests; it is refused without --allow-test-boot-id (never on a production node)")
		}
		b, err := os.ReadFile(*testBootID)
		id := strings.TrimSpace(string(b))
		if err != nil || id == "" {
			return fail("--test-boot-id-file %s: want a file holding a boot id (%v)", *testBootID, err)
		}
		// Read once: a boot id does not change while the machine runs.
		cfg.BootID = func() string { return id }
		logger.Warn("TEST BOOT ID: this node takes its boot id from a file; it is for tests only", "boot_id", id, "file", *testBootID)
	}
	cfg.AutoFinalizeUpgrade = *autoFinalize
	cfg.InitialClusterVersion = *initialCV
	if *testCVMax != 0 {
		if !*allowTestVersions {
			return fail("--test-cluster-version-max makes this binary play another release for tests; it is refused without --allow-test-versions (never on a production node)")
		}
		if *testCVMax < 1 {
			return fail("--test-cluster-version-max %d: want at least 1", *testCVMax)
		}
		cfg.ClusterVersionMax = *testCVMax
		logger.Warn("TEST VERSIONS: this node announces and applies another release's cluster versions; it is for tests only", "cluster_version_max", *testCVMax)
	}
	var err error
	if cfg.RatePerSource, err = restarea.ParseLimit(*perSource); err != nil {
		return fail("--rate-per-source: %v", err)
	}
	if cfg.RateGlobal, err = restarea.ParseLimit(*global); err != nil {
		return fail("--rate-global: %v", err)
	}
	if cfg.SearchRatePerSource, err = restarea.ParseLimit(*searchRate); err != nil {
		return fail("--search-rate-per-source: %v", err)
	}
	if *searchConc < 0 || *searchConcSource < 1 {
		return fail("--search-concurrency must be 0 or more and --search-concurrency-per-source 1 or more")
	}
	cfg.SearchConcurrency, cfg.SearchPerSourceConcurrency = *searchConc, *searchConcSource
	if cfg.Retention, err = restarea.ParseDuration(*retention); err != nil || cfg.Retention <= 0 {
		return fail("--retention %q: want a positive duration such as 90d or 2160h", *retention)
	}
	if cfg.TombstoneRetention, err = restarea.ParseDuration(*tombRetention); err != nil || cfg.TombstoneRetention <= 0 {
		return fail("--tombstone-retention %q: want a positive duration such as 30d", *tombRetention)
	}
	if cfg.TrustedProxies, err = httpx.ParseTrustedProxies(*proxies); err != nil {
		return fail("--trusted-proxies: %v", err)
	}
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			cfg.AllowedOrigins = append(cfg.AllowedOrigins, o)
		}
	}

	for _, u := range strings.Split(*join, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.JoinURLs = append(cfg.JoinURLs, u)
		}
	}
	cfg.BootstrapExpect = *expect
	if cfg.ClusterSecret, err = loadSecret("cluster-secret", *secret, *secretFile); err != nil {
		return fail("%v", err)
	}
	token, err := loadSecret("admin-token", *adminToken, *adminTokenFile)
	if err != nil {
		return fail("%v", err)
	}
	cfg.AdminToken = string(token)
	if *tlsCert != "" || *tlsKey != "" || *tlsCA != "" {
		if cfg.TLS, err = transport.LoadTLS(*tlsCert, *tlsKey, *tlsCA); err != nil {
			return fail("tls: %v", err)
		}
	}

	if (*httpCert == "") != (*httpKey == "") {
		return fail("give --http-tls-cert and --http-tls-key together")
	}
	if *httpCert != "" {
		if cfg.HTTPTLS, err = server.LoadHTTPS(*httpCert, *httpKey, logger); err != nil {
			return fail("https: %v", err)
		}
	}
	if *httpCA != "" {
		pool, err := certs.LoadPool(*httpCA)
		if err != nil {
			return fail("--http-tls-ca: %v", err)
		}
		cfg.PublicClientTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}

	n, err := server.Start(cfg)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	if *pprofAddr != "" {
		servePprof(*pprofAddr, logger)
	}
	logger.Info("serving", "node_id", n.ID(), "url", n.URL(), "raft", n.RaftAddr(), "data_dir", cfg.DataDir)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var s os.Signal
	select {
	case s = <-sig:
	case <-n.Done():
		// The node stopped by itself: its state machine met a cluster
		// version this binary does not know (it logged why).
		signal.Stop(sig)
		n.Close()
		// The node's ERROR line said why; this one only closes the story.
		logger.Info("node stopped by itself; exiting", "halted", n.Halted() != nil)
		return 1
	}
	logger.Info("shutting down", "signal", s.String())
	signal.Stop(sig)
	if err := n.Close(); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	return 0
}

// loadSecret returns the secret of flag --name from its value or from
// the file of --name-file (not both); surrounding whitespace in the file
// is ignored.
func loadSecret(name, value, file string) ([]byte, error) {
	switch {
	case value != "" && file != "":
		return nil, fmt.Errorf("give --%s or --%s-file, not both", name, name)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--%s-file: %v", name, err)
		}
		return []byte(strings.TrimSpace(string(b))), nil
	}
	return []byte(value), nil
}
