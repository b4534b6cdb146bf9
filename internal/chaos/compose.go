package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// dockerTimeout bounds one docker command.
const dockerTimeout = 30 * time.Second

// ComposeOptions describe the docker compose cluster of
// docker-compose.yml.
type ComposeOptions struct {
	// Project is the compose project name ("restarea").
	Project string
	// Services are the node services in node-index order (node1..node3).
	Services []string
	// URLs are the nodes' published HTTP URLs, in the same order
	// (http://127.0.0.1:8081..8083).
	URLs []string
	// Network is the compose network the nodes talk over
	// ("<project>_restarea").
	Network string
	// AdminToken is the cluster's RESTAREA_ADMIN_TOKEN.
	AdminToken string
}

// ComposeDefaults returns the conventions of docker-compose.yml.
func ComposeDefaults() ComposeOptions {
	return ComposeOptions{
		Project:    "restarea",
		Services:   []string{"node1", "node2", "node3"},
		URLs:       []string{"http://127.0.0.1:8081", "http://127.0.0.1:8082", "http://127.0.0.1:8083"},
		AdminToken: "dev-admin-token-change-me",
	}
}

// Compose is a Target of the docker compose cluster, faulted with docker:
// kill (SIGKILL) and start, pause and unpause, and network disconnect and
// connect on the project's network.
type Compose struct {
	opts       ComposeOptions
	containers []string

	mu           sync.Mutex
	disconnected map[int]bool
}

var (
	_ Target            = (*Compose)(nil)
	_ FaultDriver       = (*Compose)(nil)
	_ GracefulRestarter = (*Compose)(nil)
)

// NewCompose finds the containers of the project's node services.
func NewCompose(ctx context.Context, opts ComposeOptions) (*Compose, error) {
	if len(opts.Services) != len(opts.URLs) || len(opts.URLs) == 0 {
		return nil, fmt.Errorf("chaos: compose needs one URL per service (%d services, %d URLs)", len(opts.Services), len(opts.URLs))
	}
	if opts.Network == "" {
		opts.Network = opts.Project + "_restarea"
	}
	c := &Compose{opts: opts, disconnected: map[int]bool{}}
	for _, svc := range opts.Services {
		out, err := docker(ctx, "ps", "-aq",
			"--filter", "label=com.docker.compose.project="+opts.Project,
			"--filter", "label=com.docker.compose.service="+svc)
		if err != nil {
			return nil, err
		}
		ids := strings.Fields(out)
		if len(ids) != 1 {
			return nil, fmt.Errorf("chaos: compose project %q service %q: %d containers (is the cluster up? make cluster-up)", opts.Project, svc, len(ids))
		}
		c.containers = append(c.containers, ids[0])
	}
	return c, nil
}

// docker runs one docker command and returns its standard output.
func docker(ctx context.Context, args ...string) (string, error) {
	return dockerWithin(ctx, dockerTimeout, args...)
}

// dockerWithin runs one docker command bounded by timeout.
func dockerWithin(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Name implements Target.
func (c *Compose) Name() string {
	return fmt.Sprintf("compose project %s (%d nodes)", c.opts.Project, len(c.containers))
}

// URLs implements Target.
func (c *Compose) URLs() []string { return c.opts.URLs }

// AdminToken implements Target.
func (c *Compose) AdminToken() string { return c.opts.AdminToken }

// Faults implements Target.
func (c *Compose) Faults() FaultDriver { return c }

// Kinds implements FaultDriver: kill, pause and partition.
func (c *Compose) Kinds() []string { return []string{ClassKill, ClassPause, ClassPartition} }

// Kill implements FaultDriver with docker kill (SIGKILL).
func (c *Compose) Kill(ctx context.Context, i int) error {
	_, err := docker(ctx, "kill", "--signal", "KILL", c.containers[i])
	return err
}

// Restart implements FaultDriver with docker start (a no-op when the
// restart policy already brought the container back).
func (c *Compose) Restart(ctx context.Context, i int) error {
	_, err := docker(ctx, "start", c.containers[i])
	return err
}

// RestartGracefully implements GracefulRestarter with docker restart:
// SIGTERM to the node (PID 1 in its container), SIGKILL only if it has
// not exited within stopTimeout, then start on the same volume.
func (c *Compose) RestartGracefully(ctx context.Context, i int) error {
	_, err := dockerWithin(ctx, stopTimeout+dockerTimeout, "restart", "--time", fmt.Sprint(int(stopTimeout.Seconds())), c.containers[i])
	return err
}

// Pause implements FaultDriver with docker pause.
func (c *Compose) Pause(ctx context.Context, i int) error {
	_, err := docker(ctx, "pause", c.containers[i])
	return err
}

// Resume implements FaultDriver with docker unpause.
func (c *Compose) Resume(ctx context.Context, i int) error {
	_, err := docker(ctx, "unpause", c.containers[i])
	return err
}

// Isolate implements FaultDriver with docker network disconnect: each
// node is cut off from every other (and its published port stops
// answering).
func (c *Compose) Isolate(ctx context.Context, nodes []int) error {
	for _, i := range nodes {
		if _, err := docker(ctx, "network", "disconnect", c.opts.Network, c.containers[i]); err != nil {
			return err
		}
		c.mu.Lock()
		c.disconnected[i] = true
		c.mu.Unlock()
	}
	return nil
}

// Heal implements FaultDriver: it reconnects every disconnected node
// under its service name, which the other nodes dial.
func (c *Compose) Heal(ctx context.Context) error {
	c.mu.Lock()
	var nodes []int
	for i := range c.disconnected {
		nodes = append(nodes, i)
	}
	c.mu.Unlock()
	for _, i := range nodes {
		if _, err := docker(ctx, "network", "connect", "--alias", c.opts.Services[i], c.opts.Network, c.containers[i]); err != nil {
			return err
		}
		c.mu.Lock()
		delete(c.disconnected, i)
		c.mu.Unlock()
	}
	return nil
}

// Close implements Target: the cluster stays up (make cluster-down stops
// it).
func (c *Compose) Close() error { return nil }
