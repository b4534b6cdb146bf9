# rest.area node image.
#
# The image holds one static binary and nothing else (no shell, no libc):
# build it on the host first, then build the image from the repository root,
# where .dockerignore keeps the context down to that one file:
#
#   make image
#   # or by hand:
#   CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o build/image/restarea ./cmd/restarea
#   mkdir -p build/image/data
#   docker build -t restarea:local .
#
# No base image is pulled: nothing here needs a registry.
FROM scratch

COPY build/image/restarea /restarea
# An empty directory owned by the unprivileged user: a fresh named volume
# mounted on /data takes this ownership, so the node need not run as root.
COPY --chown=65532:65532 build/image/data /data
USER 65532:65532

# 8080: REST, MCP, pages, /metrics, /healthz, /readyz.
# 8300: raft and the node-to-node channel (one port; every connection proves
# the cluster secret). The single-node default below keeps it on loopback.
EXPOSE 8080 8300

# Raft log, snapshots, state and the node id. (A bind mount must be
# writable by uid 65532, or run with --user.)
VOLUME /data

ENTRYPOINT ["/restarea"]
# A single node: docker run -p 127.0.0.1:8080:8080 -v restarea-data:/data restarea:local
# Its raft port stays on the container's loopback: a node without a cluster
# secret (or TLS) refuses to bind it anywhere else, since anyone reaching it
# could drive raft. A cluster (docker-compose.yml) passes a secret and binds
# --raft-addr 0.0.0.0:8300 with --raft-advertise nodeN:8300.
CMD ["serve", "--data-dir", "/data", "--http-addr", "0.0.0.0:8080", "--raft-addr", "127.0.0.1:8300"]
