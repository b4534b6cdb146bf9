package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/restarea/restarea/fsm"
)

// RestoreBackup makes the state of this node — which must be the leader of
// a cluster with no other voters, e.g. a fresh single node — the state in
// the backup file at path. It goes through raft's own restore, which puts
// the log index past the backup's, so the restored state is sent to any
// node that joins later by snapshot install.
func (n *Node) RestoreBackup(ctx context.Context, path string) error {
	applied, err := fsm.CheckStateFile(path)
	if err != nil {
		return err
	}
	if err := n.WaitLeader(ctx); err != nil {
		return err
	}
	if !n.IsLeader() {
		return fmt.Errorf("restore must run on the leader")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	meta := &raft.SnapshotMeta{
		Version: raft.SnapshotVersionMax, ID: "restore", Index: applied, Term: n.raft.CurrentTerm(),
		Configuration: cf.Configuration(), Size: st.Size(),
	}
	timeout := 5 * time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	// Raft refuses a restore until a new leader has applied its own
	// configuration entry, moments after the election: wait for that.
	for {
		err = n.raft.Restore(meta, f, timeout)
		if err == nil || !strings.Contains(err.Error(), "cannot restore snapshot now") {
			break
		}
		if _, serr := f.Seek(0, io.SeekStart); serr != nil {
			return serr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("raft restore: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("raft restore: %w", err)
	}
	n.log.Info("restored state from backup", "path", path, "backup_applied_index", applied)
	return nil
}
