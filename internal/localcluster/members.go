package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Wipe erases the data directory of node i, which must be stopped: the
// node starts next time with no state, as on a new disk.
func (c *Cluster) Wipe(i int) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("localcluster: no node %d", i)
	}
	if c.Running(i) {
		return fmt.Errorf("localcluster: %s is running; stop it before wiping its data", c.nodes[i].ID)
	}
	n := c.nodes[i]
	// What the directory holds goes, not the directory: on powerfs it is
	// the mount point of the node's machine.
	entries, err := os.ReadDir(n.DataDir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(n.DataDir, 0o750)
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(n.DataDir, e.Name())); err != nil {
			return err
		}
	}
	// Synced, so that a later power cut cannot bring the old files back.
	d, err := os.Open(n.DataDir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// StartAs starts the stopped node i under id (its old one, or a new one
// after Wipe) on its addresses. It joins the formed cluster through
// --join, as a node added to a running cluster does: it never takes part
// in a bootstrap again.
func (c *Cluster) StartAs(i int, id string) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("localcluster: no node %d", i)
	}
	if id == "" {
		return errors.New("localcluster: a node id is required")
	}
	if c.Running(i) {
		return fmt.Errorf("localcluster: %s is running", c.nodes[i].ID)
	}
	c.mu.Lock()
	n := c.nodes[i]
	n.ID, n.joinOnly, n.out = id, true, false
	c.mu.Unlock()
	return c.start(i)
}

// AddNode starts one more node, with no state, that joins the cluster
// through --join, and returns its index. A node set out earlier (and so
// stopped) is reused, wiped, under its index's default id; otherwise a
// new one gets the next index, loopback address and fault proxy.
func (c *Cluster) AddNode() (int, error) {
	for i, n := range c.nodes {
		if n.out && !c.Running(i) {
			if err := c.Wipe(i); err != nil {
				return -1, err
			}
			return i, c.StartAs(i, fmt.Sprintf("node%d", i+1))
		}
	}
	i := len(c.nodes)
	n, err := c.newNode(i)
	if err != nil {
		return -1, err
	}
	if err := c.addProxy(n); err != nil {
		return -1, err
	}
	n.joinOnly = true
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	if err := c.start(i); err != nil {
		return -1, err
	}
	return i, nil
}

// SetOut marks node i as no longer a member (it was removed from the
// cluster and stopped): WaitReady no longer waits for it or counts it
// among the members every node must see. StartAs and AddNode bring it
// back.
func (c *Cluster) SetOut(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= 0 && i < len(c.nodes) {
		c.nodes[i].out = true
	}
}
