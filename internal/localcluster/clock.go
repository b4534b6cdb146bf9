package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// clockFile is node n's test clock offset file (Options.TestClock).
func (c *Cluster) clockFile(n *Node) string {
	return filepath.Join(c.opts.Dir, n.ID+".clock-offset")
}

// TestClock reports whether the nodes run with a test clock.
func (c *Cluster) TestClock() bool { return c.opts.TestClock }

// SetClockOffset steps node i's wall clock to run d ahead of real time (0:
// back to real time). The node reads the file within 100 ms. It needs
// Options.TestClock.
func (c *Cluster) SetClockOffset(i int, d time.Duration) error {
	if !c.opts.TestClock {
		return errors.New("localcluster: the nodes were started without a test clock (Options.TestClock)")
	}
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("localcluster: no node %d", i)
	}
	path := c.clockFile(c.nodes[i])
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(d.String()+"\n"), 0o640); err != nil {
		return err
	}
	// A rename, so the node never reads a half-written offset.
	return os.Rename(tmp, path)
}
