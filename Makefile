# rest.area: build, image, and a three-node cluster with docker compose.
#
#   make build           static binary in bin/restarea
#   make install         make build, then bin/restarea into $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local)
#   make image           static linux binary in build/image/ + docker image $(IMAGE)
#   make cluster-up      image, docker compose up -d, wait for the three /readyz
#   make cluster-status  GET /api/v1/cluster on the three nodes (with the admin token: addresses too)
#   make cluster-down    docker compose down -v --remove-orphans (erases the volumes)
#   make rolling-restart restart node1..3 in turn under load, checked (cluster-up first if needed)
#   make upgrade-test    the previous release's nodes replaced one at a time by this build, under load, checked
#   make soak            restarea chaos --local 5, every fault kind, >= 30 min (not in CI)
#   make test            go test ./...
#   make test-busy       go test -race ./... RUNS times beside a load that keeps every core busy
#   make release VERSION=vX.Y.Z [RECORD=1] [ALLOW_DIRTY=1]
#                        binaries, image tarballs and SHA256SUMS in dist/vX.Y.Z/ (docs/releases.md)

SHELL := /bin/sh

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
BUILDINFO := github.com/restarea/restarea/internal/buildinfo
LDFLAGS  := -s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT)
IMAGE    ?= restarea:local
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
# The image always runs on linux; the architecture is the docker engine's
# (the host's, unless GOARCH is given).
IMAGE_GOARCH ?= $(shell $(GO) env GOARCH)

# `docker compose` (v2 plugin) if present, else the standalone docker-compose.
COMPOSE ?= $(shell if docker compose version >/dev/null 2>&1; then echo "docker compose"; \
	elif command -v docker-compose >/dev/null 2>&1; then echo docker-compose; \
	else echo "docker compose"; fi)

# The compose project (container, network and volume name prefix).
COMPOSE_PROJECT_NAME ?= restarea
export COMPOSE_PROJECT_NAME

# Host ports of node1..3 (docker-compose.yml reads the same variables).
RESTAREA_PORT1 ?= 8081
RESTAREA_PORT2 ?= 8082
RESTAREA_PORT3 ?= 8083
export RESTAREA_PORT1 RESTAREA_PORT2 RESTAREA_PORT3
export RESTAREA_IMAGE := $(IMAGE)
PORTS := $(RESTAREA_PORT1) $(RESTAREA_PORT2) $(RESTAREA_PORT3)
READY_TIMEOUT ?= 60

.PHONY: release build install image cluster-up cluster-down cluster-status cluster-logs rolling-restart upgrade-test soak test test-busy clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/restarea ./cmd/restarea

# The binary make build stamps, installed with mode 0755; DESTDIR is for
# packagers (a staging root). Without write access to BINDIR, either give
# PREFIX=$HOME/.local, or build first and install as root:
# make build && sudo make install (make install as root builds again,
# with root's Go).
install: build
	install -d "$(DESTDIR)$(BINDIR)"
	install -m 0755 bin/restarea "$(DESTDIR)$(BINDIR)/restarea"
	@echo "installed $(DESTDIR)$(BINDIR)/restarea ($$("$(DESTDIR)$(BINDIR)/restarea" version | head -1))"

image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_GOARCH) $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o build/image/restarea ./cmd/restarea
	mkdir -p build/image/data
	docker build -t $(IMAGE) .

cluster-up: image
	$(COMPOSE) up -d --no-build
	@echo "waiting up to $(READY_TIMEOUT)s for /readyz on ports $(PORTS)"; \
	start=$$(date +%s); \
	while :; do \
		ready=0; line=""; \
		for p in $(PORTS); do \
			code=$$(curl -s -o /dev/null -m 2 -w '%{http_code}' http://127.0.0.1:$$p/readyz); \
			line="$$line $$p=$$code"; \
			[ "$$code" = 200 ] && ready=$$((ready+1)); \
		done; \
		elapsed=$$(( $$(date +%s) - start )); \
		echo "  $${elapsed}s:$$line"; \
		if [ $$ready -eq 3 ]; then echo "cluster ready"; break; fi; \
		if [ $$elapsed -ge $(READY_TIMEOUT) ]; then \
			echo "cluster not ready after $(READY_TIMEOUT)s; last logs:"; \
			$(COMPOSE) logs --no-color --tail 40; \
			exit 1; \
		fi; \
		sleep 2; \
	done

cluster-status:
	@for p in $(PORTS); do \
		echo "== 127.0.0.1:$$p/api/v1/cluster"; \
		curl -sS -m 5 -H "Authorization: Bearer $${RESTAREA_ADMIN_TOKEN:-dev-admin-token-change-me}" \
			http://127.0.0.1:$$p/api/v1/cluster || true; \
		echo; \
	done

cluster-logs:
	$(COMPOSE) logs --no-color --tail 100

# A rolling restart of the compose cluster under load: restarea chaos
# restarts node1, node2, node3 in turn (docker restart: SIGTERM, then
# start on the same volume), waits for each one's /readyz, and checks
# that no acknowledged post was lost or duplicated. Rounds repeat for
# ROLLING_DURATION; the report is in bin/rolling-restart.json.
ROLLING_DURATION ?= 30s
ROLLING_SEED     ?= 1

rolling-restart: build
	@ready=0; \
	for p in $(PORTS); do \
		[ "$$(curl -s -o /dev/null -m 2 -w '%{http_code}' http://127.0.0.1:$$p/readyz)" = 200 ] && ready=$$((ready+1)); \
	done; \
	if [ $$ready -ne 3 ]; then $(MAKE) --no-print-directory cluster-up; fi
	bin/restarea chaos --compose --compose-project $(COMPOSE_PROJECT_NAME) --rolling-restart \
		--duration $(ROLLING_DURATION) --seed $(ROLLING_SEED) \
		--report bin/rolling-restart.json --out bin/rolling-restart

# A rolling upgrade under load, from the previous release to this build:
# internal/prevrelease picks the newest line of RELEASES whose commit is
# an ancestor of HEAD (and not HEAD), and builds it once into
# bin/release-VERSION/restarea (a temporary git worktree, removed after).
# Then restarea chaos --local N --upgrade-from that binary: (a) 3 nodes,
# (b) 5 nodes with a downgrade of one upgraded node and back, each
# finalized (UPGRADE_FINALIZE= to leave the finalize step out) and
# followed by a last round of posts and replays. Reports in
# bin/upgrade-3.json and bin/upgrade-5.json; the longest write gap of each
# run is printed.
UPGRADE_DURATION ?= 30s
UPGRADE_SEED     ?= 1
UPGRADE_FINALIZE ?= --finalize
UPGRADE_TIMEOUT  ?= 240

upgrade-test: build
	@prev=$$($(GO) run ./internal/prevrelease/cmd/prevrelease -dir bin) || exit 1; \
	rc=0; \
	for run in "3" "5 --downgrade-one"; do \
		n=$${run%% *}; extra=$${run#$$n}; \
		echo "== rolling upgrade, $$n nodes$$extra: $$prev -> bin/restarea"; \
		timeout $(UPGRADE_TIMEOUT) bin/restarea chaos --local $$n --upgrade-from "$$prev" $$extra $(UPGRADE_FINALIZE) \
			--duration $(UPGRADE_DURATION) --seed $(UPGRADE_SEED) \
			--report bin/upgrade-$$n.json --out bin/upgrade-$$n > bin/upgrade-$$n.txt || rc=$$?; \
		cat bin/upgrade-$$n.txt; \
		echo "upgrade-test, $$n nodes: $$(grep -m1 '^write unavailability' bin/upgrade-$$n.txt | tr -s ' ')"; \
	done; \
	exit $$rc

# A long soak: five local node processes, every fault class the local
# driver has (kill, pause, partition, membership, power cuts on powerfs,
# rot, and any added since),
# one fault per SOAK_FAULT_EVERY. The workload runs SOAK_DURATION, then
# on until SOAK_MIN_OPS calls and SOAK_MIN_FAULTS faults are reached, but
# never past SOAK_MAX_DURATION. Progress lines go to stderr every 5s; the
# report is printed and written to bin/soak.json, the history to
# bin/soak-history.jsonl. Not part of CI: it takes at least half an hour.
SOAK_DURATION     ?= 30m
SOAK_MAX_DURATION ?= 90m
SOAK_MIN_OPS      ?= 1000000
SOAK_MIN_FAULTS   ?= 200
SOAK_FAULT_EVERY  ?= 8s
SOAK_WORKERS      ?= 32
SOAK_SEED         ?= 1
# Power cuts need FUSE (internal/powerfs); SOAK_POWER_FS= runs without them.
SOAK_POWER_FS     ?= --power-fs

soak: build
	bin/restarea chaos --local 5 $(SOAK_POWER_FS) --faults all --fault-interval $(SOAK_FAULT_EVERY) \
		--duration $(SOAK_DURATION) --min-ops $(SOAK_MIN_OPS) --min-faults $(SOAK_MIN_FAULTS) \
		--max-duration $(SOAK_MAX_DURATION) --workers $(SOAK_WORKERS) --seed $(SOAK_SEED) \
		--settle-timeout 5m --report bin/soak.json --history bin/soak-history.jsonl --out bin/soak

cluster-down:
	$(COMPOSE) down -v --remove-orphans

test:
	$(GO) test ./...

# The suite must pass on a machine whose cores are busy with other work:
# one spinning shell per core (each bounded by BUSY_LIMIT, and killed when
# the runs end) beside RUNS runs of the README's test command.
RUNS       ?= 3
BUSY_LIMIT ?= 3h
test-busy:
	@mkdir -p bin; cores=$$(getconf _NPROCESSORS_ONLN); pids=""; \
	for i in $$(seq $$cores); do timeout $(BUSY_LIMIT) sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT; \
	echo "$$cores busy loops; $(RUNS) runs of go test -race ./..."; \
	for r in $$(seq $(RUNS)); do \
		start=$$(date +%s); \
		$(GO) test -race -count=1 -timeout 40m ./... > bin/test-busy-$$r.log 2>&1; rc=$$?; \
		echo "run $$r: exit $$rc in $$(( $$(date +%s) - start ))s (bin/test-busy-$$r.log)"; \
		[ $$rc -eq 0 ] || { grep -E '^(--- FAIL|FAIL|panic)' bin/test-busy-$$r.log | head -20; exit $$rc; }; \
	done

# A release (docs/releases.md): VERSION must be vMAJOR.MINOR.PATCH[-pre],
# the tree clean (ALLOW_DIRTY=1 builds a dirty one for a trial; it is
# stamped <commit>-dirty and never recorded), the version not in RELEASES
# under another commit. Into dist/VERSION/: static linux amd64 and arm64
# binaries stamped with VERSION and the HEAD commit, an image tarball of
# each (OCI layout + docker-archive manifest.json, internal/release),
# LICENSE, NOTICE and SHA256SUMS over them all. RECORD=1 then appends
# "VERSION COMMIT DATE" to RELEASES (commit that line).
RELEASE_ARCHES ?= amd64 arm64
RELEASE_REPO   ?= restarea

release:
	@set -e; v="$(VERSION)"; \
	echo "release $$v: checking the version, the tree and RELEASES"; \
	echo "$$v" | grep -Eq '^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$$' || \
		{ echo "release: VERSION=$$v is not a semantic version vMAJOR.MINOR.PATCH[-pre] (make release VERSION=v1.2.3)" >&2; exit 2; }; \
	commit=$$(git rev-parse HEAD); stamp=$$commit; \
	if [ -n "$$(git status --porcelain)" ]; then \
		if [ "$(ALLOW_DIRTY)" != 1 ]; then git status --short >&2; \
			echo "release: the tree has changes (above): commit them, or ALLOW_DIRTY=1 for a trial build" >&2; exit 2; fi; \
		if [ "$(RECORD)" = 1 ]; then echo "release: RECORD=1 records only a build of a clean tree" >&2; exit 2; fi; \
		stamp=$$commit-dirty; echo "  the tree has changes: ALLOW_DIRTY=1, stamped $$stamp"; \
	fi; \
	listed=$$(awk -v v="$$v" '$$1 == v { print $$2 }' RELEASES); \
	if [ -n "$$listed" ] && [ "$$listed" != "$$commit" ]; then \
		echo "release: $$v is already in RELEASES, built from $$listed (pick the next version)" >&2; exit 2; fi; \
	if [ -n "$$listed" ] && [ "$(RECORD)" = 1 ]; then \
		echo "release: $$v is already recorded in RELEASES" >&2; exit 2; fi; \
	created=$$(git show -s --format=%ct HEAD); out=dist/$$v; \
	rm -rf "$$out"; mkdir -p "$$out"; \
	for arch in $(RELEASE_ARCHES); do \
		bin=$$out/restarea-$$v-linux-$$arch; \
		echo "release $$v: building $$bin (static, stamped $$v $$stamp)"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "-s -w -X $(BUILDINFO).version=$$v -X $(BUILDINFO).commit=$$stamp" -o "$$bin" ./cmd/restarea; \
		echo "release $$v: image tarball $$bin.oci.tar"; \
		$(GO) run ./internal/release image -binary "$$bin" -arch $$arch -tag $(RELEASE_REPO):$$v \
			-version $$v -commit $$stamp -created $$created -o "$$bin.oci.tar"; \
	done; \
	install -m 0644 LICENSE NOTICE "$$out/"; \
	echo "release $$v: SHA256SUMS"; \
	(cd "$$out" && sha256sum $$(ls | grep -v '^SHA256SUMS$$') > SHA256SUMS && sha256sum -c --quiet SHA256SUMS); \
	ls -l "$$out"; \
	if [ "$(RECORD)" = 1 ]; then \
		echo "$$v $$commit $$(date -u +%Y-%m-%d)" >> RELEASES; \
		echo "release $$v: recorded in RELEASES; commit it (git commit RELEASES -m 'RELEASES: $$v')"; \
	else echo "release $$v: built in $$out (not recorded: RECORD=1 records it in RELEASES)"; fi

clean:
	rm -rf bin build/image/restarea
