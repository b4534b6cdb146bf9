package bench

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartSeeded restores backup into a new data directory under dir with
// `restarea restore` and serves it as a single node with `restarea
// serve` (the bench's limits, loopback ports). The node's output goes to
// dir/node.log.
func StartSeeded(ctx context.Context, binary, dir, backup string) (*Target, error) {
	data := filepath.Join(dir, "data")
	raftAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "node.log"))
	if err != nil {
		return nil, err
	}
	restore := exec.CommandContext(ctx, binary, "restore", "--from", backup, "--data-dir", data,
		"--raft-addr", raftAddr, "--node-id", "bench")
	restore.Stdout, restore.Stderr = logf, logf
	if err := restore.Run(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("restarea restore: %v: %s", err, tail(logf.Name()))
	}
	args := append([]string{"serve", "--data-dir", data, "--raft-addr", raftAddr, "--http-addr", httpAddr,
		"--node-id", "bench"}, benchArgs...)
	logf.Close()
	url := "http://" + httpAddr
	pid, stop, err := serveProcess(ctx, binary, args, filepath.Join(dir, "node.log"), url)
	if err != nil {
		return nil, err
	}
	return &Target{URLs: []string{url}, DataDirs: []string{data}, Pids: []int{pid}, close: stop}, nil
}

// serveProcess starts `binary args` (a `restarea serve`) with its output
// appended to logPath, and waits until url answers /readyz. stop ends it
// with SIGTERM, and SIGKILL after 15 s.
func serveProcess(ctx context.Context, binary string, args []string, logPath, url string) (pid int, stop func() error, err error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return 0, nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	stop = func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		return nil
	}
	if err := waitReady(ctx, url, exited); err != nil {
		stop()
		return 0, nil, fmt.Errorf("%v: %s", err, tail(logPath))
	}
	return cmd.Process.Pid, stop, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls /readyz until it answers 200, the process exits or
// two minutes pass.
func waitReady(ctx context.Context, url string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cl := NewClient(1)
	for {
		if status, _, err := cl.Get(ctx, url, "/readyz", 0); err == nil && status == 200 {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("node exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("node at %s not ready: %w", url, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Memory is a process's resident memory, from /proc/PID/status.
type Memory struct {
	RSSBytes  int64 `json:"rss_bytes"`
	AnonBytes int64 `json:"anon_bytes"`
	FileBytes int64 `json:"file_bytes"`
}

// ReadMemory reads VmRSS, RssAnon and RssFile of pid.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			m.RSSBytes = kb << 10
		case "RssAnon":
			m.AnonBytes = kb << 10
		case "RssFile":
			m.FileBytes = kb << 10
		}
	}
	return m, sc.Err()
}

// Disk is what a node's data directory holds, in bytes allocated on disk
// (bbolt files grow sparsely, so this can be below their length).
type Disk struct {
	StateBytes    int64 `json:"state_bytes"`
	RaftLogBytes  int64 `json:"raft_log_bytes"`
	SnapshotBytes int64 `json:"snapshot_bytes"`
}

// ReadDisk measures dir's state.db, raft.db and snapshots/.
func ReadDisk(dir string) Disk {
	return Disk{
		StateBytes:    allocated(filepath.Join(dir, "state.db")),
		RaftLogBytes:  allocated(filepath.Join(dir, "raft.db")),
		SnapshotBytes: allocated(filepath.Join(dir, "snapshots")),
	}
}

func allocated(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			} else {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// tail returns the last lines of a log file, for error messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return strings.TrimSpace(string(b))
}
