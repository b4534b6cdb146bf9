package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/restarea/restarea/internal/powerfs"
)

// powerNode is the simulated machine under a node whose data directory is
// on powerfs (Options.PowerFS): its disk (a backing directory beside the
// data directory), the mount, and the boot it is in.
type powerNode struct {
	m        *powerfs.Machine
	bootFile string
	boot     int
}

// PowerFS reports whether the nodes' data directories are on powerfs.
func (c *Cluster) PowerFS() bool { return c.opts.PowerFS }

// mountPower mounts powerfs on n's data directory the first time n
// starts, and writes its first boot id.
func (c *Cluster) mountPower(n *Node) error {
	if !c.opts.PowerFS || n.power != nil {
		return nil
	}
	disk := filepath.Join(c.opts.Dir, n.ID+".disk")
	m, err := powerfs.NewMachine(disk, n.DataDir, powerfs.Options{WritebackCache: true})
	if err != nil {
		return fmt.Errorf("localcluster: %s: %w", n.ID, err)
	}
	n.power = &powerNode{m: m, bootFile: filepath.Join(c.opts.Dir, n.ID+".boot-id")}
	return n.power.nextBoot()
}

func (p *powerNode) nextBoot() error {
	p.boot++
	return os.WriteFile(p.bootFile, fmt.Appendf(nil, "boot-%d\n", p.boot), 0o600)
}

// powerArgs are the flags that let a node on powerfs learn its boot id
// from its file, so that a reboot is a new boot to it.
func (c *Cluster) powerArgs(n *Node) []string {
	if !c.opts.PowerFS || n.power == nil {
		return nil
	}
	// The machine's file, not one named for the node's id: a node wiped
	// and started under a new id (a membership or rot fault) is on the
	// same machine.
	return []string{"--allow-test-boot-id", "--test-boot-id-file=" + n.power.bootFile}
}

// PowerCut cuts the power of the given nodes at once: each one's file
// system drops every write and name not yet fsynced (all of them before
// any process dies), then each process is killed. PowerOn brings a node
// back.
func (c *Cluster) PowerCut(nodes []int) error {
	if !c.opts.PowerFS {
		return errors.New("localcluster: power cuts need Options.PowerFS")
	}
	for _, i := range nodes {
		if p := c.nodes[i].power; p != nil {
			p.m.Cut()
		}
	}
	var err error
	for _, i := range nodes {
		err = errors.Join(err, c.Kill(i))
	}
	return err
}

// PowerOn reboots node i's machine after a power cut — its file system is
// mounted again from what was synced, with a new boot id — and starts
// the node on it.
func (c *Cluster) PowerOn(i int) error {
	n := c.nodes[i]
	if c.Running(i) {
		return nil
	}
	if n.power == nil {
		return c.start(i)
	}
	if err := n.power.m.Reboot(); err != nil {
		return fmt.Errorf("localcluster: reboot %s: %w", n.ID, err)
	}
	if err := n.power.nextBoot(); err != nil {
		return err
	}
	return c.start(i)
}

// closePower unmounts every node's powerfs (the processes have exited).
func (c *Cluster) closePower() {
	for _, n := range c.nodes {
		if n.power != nil {
			if err := n.power.m.Close(); err != nil {
				syscall.Unmount(n.DataDir, syscall.MNT_DETACH)
			}
			n.power = nil
		}
	}
}
