// Package deploy holds no code of its own: it tests the deployment files at
// the repository root (Dockerfile, .dockerignore, docker-compose.yml) by
// building the image from a host-built static binary, starting the
// three-node compose cluster under a throw-away project name and ports,
// and checking that writes survive the loss of the leader.
//
// The test skips itself when docker is missing or not answering, when no
// compose command is available, or under `go test -short`.
package deploy
