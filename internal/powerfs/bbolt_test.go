package powerfs_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/powerfs"
	"github.com/restarea/restarea/internal/testkit"
	"go.etcd.io/bbolt"
)

// TestMain lets this test binary run bbolt as a separate process: a
// process must not read through an mmap a FUSE file system that it serves
// itself (a page fault blocks a thread that Go's garbage collector then
// waits for, while the goroutines that would answer the fault are
// stopped).
func TestMain(m *testing.M) {
	if args := os.Getenv("POWERFS_BBOLT_HELPER"); args != "" {
		os.Exit(bboltHelper(strings.Split(args, ",")))
	}
	testkit.Main(m)
}

// bboltHelper either commits n transactions ("commit PATH NOSYNC N"),
// printing "committed" after the last, then waits to be killed; or
// reports the key count and consistency check of the file ("check PATH").
func bboltHelper(args []string) int {
	path := args[1]
	if args[0] == "check" {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			fmt.Println(`{"open_error":` + fmt.Sprintf("%q", err.Error()) + `}`)
			return 0
		}
		var r bboltReport
		db.View(func(tx *bbolt.Tx) error {
			if b := tx.Bucket([]byte("b")); b != nil {
				r.Keys = b.Stats().KeyN
			}
			for err := range tx.Check() {
				r.Check = append(r.Check, err.Error())
			}
			return nil
		})
		db.Close()
		json.NewEncoder(os.Stdout).Encode(r)
		return 0
	}
	var n int
	fmt.Sscan(args[3], &n)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, NoSync: args[2] == "nosync"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// bbolt never fsyncs the directory it creates its file in.
	if d, err := os.Open(filepath.Dir(path)); err != nil || d.Sync() != nil {
		fmt.Fprintln(os.Stderr, "fsync directory failed")
		return 1
	}
	for i := range n {
		key := binary.BigEndian.AppendUint64(nil, uint64(i))
		err := db.Update(func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			// Values big enough to split pages and grow the file (remap).
			return b.Put(key, make([]byte, 700))
		})
		if err == nil {
			// Read back through the mmap, which FUSE fills.
			err = db.View(func(tx *bbolt.Tx) error {
				if tx.Bucket([]byte("b")).Get(key) == nil {
					return fmt.Errorf("key %d not read back", i)
				}
				return nil
			})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println("committed")
	select {} // until killed: no clean close
}

type bboltReport struct {
	OpenError string   `json:"open_error"`
	Keys      int      `json:"keys"`
	Check     []string `json:"check"`
}

func helper(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "POWERFS_BBOLT_HELPER="+strings.Join(args, ","))
	cmd.Stderr = os.Stderr
	return cmd
}

// bboltRun commits n transactions in a bbolt file on the mount from
// another process, cuts the power, kills that process, reboots, and
// reports what a fresh process finds in the file.
func bboltRun(t *testing.T, opts powerfs.Options, mode string, n int) bboltReport {
	m := newMachine(t, opts)
	path := m.path("bolt.db")
	cmd := helper(t, "commit", path, mode, fmt.Sprint(n))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	m.fs.Cut()
	cmd.Process.Kill()
	cmd.Wait()
	if strings.TrimSpace(line) != "committed" {
		t.Fatalf("the bbolt process did not commit its %d transactions (said %q)", n, line)
	}
	m.reboot()
	b, err := helper(t, "check", path).Output()
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	var r bboltReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("check said %q: %v", b, err)
	}
	return r
}

// bbolt with its default options (fdatasync on every commit) keeps every
// committed transaction through a power cut.
func TestBboltSurvivesCut(t *testing.T) {
	const n = 300
	for _, wb := range []bool{false, true} {
		r := bboltRun(t, powerfs.Options{WritebackCache: wb}, "sync", n)
		if r.OpenError != "" || r.Keys != n || len(r.Check) > 0 {
			t.Fatalf("after the cut (writeback cache %v): %+v; want all %d committed keys and a consistent file", wb, r, n)
		}
	}
}

// bbolt with NoSync may lose its commits; what it must not do is open a
// corrupt file without saying so.
func TestBboltNoSyncLosesCommits(t *testing.T) {
	r := bboltRun(t, powerfs.Options{WritebackCache: true}, "nosync", 50)
	if len(r.Check) > 0 {
		t.Fatalf("after the cut: a file that opened but is inconsistent: %+v", r)
	}
	t.Logf("bbolt NoSync after the cut: %+v (of 50 committed transactions)", r)
}
