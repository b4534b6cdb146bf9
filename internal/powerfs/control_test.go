package powerfs_test

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/powerfs"
)

// The control socket cuts and reboots a machine, reports its stats, and
// names a bad command.
func TestControl(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("powerfs needs FUSE: /dev/fuse: %v", err)
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mnt, 0o700)
	m, err := powerfs.NewMachine(filepath.Join(t.TempDir(), "disk"), mnt, powerfs.Options{})
	if err != nil {
		t.Skipf("powerfs needs FUSE and permission to mount: %v", err)
	}
	defer m.Close()
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go powerfs.ServeControl(ln, m)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	ask := func(cmd string) string {
		t.Helper()
		if _, err := c.Write([]byte(cmd + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(line)
	}
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("unsynced"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ask("stats"); !strings.Contains(got, `"pending_bytes":4096`) || !strings.Contains(got, `"pending_name_ops":1`) {
		t.Errorf("stats = %s, want one page and one name pending", got)
	}
	if got := ask("cut"); got != "ok" {
		t.Errorf("cut = %q", got)
	}
	if _, err := os.Stat(filepath.Join(mnt, "f")); err == nil {
		t.Error("stat after the cut succeeded")
	}
	if got := ask("reboot"); got != "ok" {
		t.Errorf("reboot = %q", got)
	}
	if _, err := os.Stat(filepath.Join(mnt, "f")); !os.IsNotExist(err) {
		t.Errorf("f after the reboot: %v, want it gone", err)
	}
	if got := ask("explode"); !strings.HasPrefix(got, "error: unknown command") {
		t.Errorf("bad command = %q", got)
	}
}
