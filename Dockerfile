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
# 8300: raft and the signed node-to-node channel (one port).
EXPOSE 8080 8300

# Raft log, snapshots, state and the node id. (A bind mount must be
# writable by uid 65532, or run with --user.)
VOLUME /data

ENTRYPOINT ["/restarea"]
# A single node: docker run -p 127.0.0.1:8080:8080 -v restarea-data:/data restarea:local
# (the raft port is bound to 0.0.0.0; the node advertises the container's
# own address unless --raft-advertise says otherwise).
CMD ["serve", "--data-dir", "/data", "--http-addr", "0.0.0.0:8080", "--raft-addr", "0.0.0.0:8300"]
