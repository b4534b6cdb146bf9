package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dockerUsable skips the test, saying why, unless a docker engine answers.
func dockerUsable(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("SKIP: docker is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("SKIP: the docker engine does not answer (docker info: %v: %s)", err, strings.TrimSpace(string(out)))
	}
}

// docker runs a docker command within ctx and returns its trimmed output.
func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, s)
	}
	return s, nil
}

// buildImage builds the image the way `make image` does (a static linux
// binary, then the FROM scratch Dockerfile) from a private copy of the
// context, so the working tree is left alone.
func buildImage(ctx context.Context, t *testing.T, root, image string) {
	t.Helper()
	dir := t.TempDir()
	goBin := "go"
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags", "-s -w -X github.com/restarea/restarea/internal/buildinfo.version=k8s-sim",
		"-o", filepath.Join(dir, "build", "image", "restarea"), "./cmd/restarea")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(dir, "build", "image", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Dockerfile", ".dockerignore"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := docker(ctx, "build", "-q", "-t", image, dir); err != nil {
		t.Fatal(err)
	}
}

// createNetwork creates a bridge network on a random private /24, so
// containers can be given explicit addresses; it retries when the subnet
// is taken.
func createNetwork(ctx context.Context, name string) (prefix string, err error) {
	for range 8 {
		b := make([]byte, 2)
		rand.Read(b)
		prefix = fmt.Sprintf("10.%d.%d.", 180+int(b[0])%60, b[1])
		_, err = docker(ctx, "network", "create", "--driver", "bridge", "--subnet", prefix+"0/24", "--label", "restarea-k8s-sim", name)
		if err == nil {
			return prefix, nil
		}
		if !strings.Contains(err.Error(), "overlap") {
			return "", err
		}
	}
	return "", err
}

// freePort is a small copy of internal/testkit.FreePort: this nested
// module does not require the root module (a replace directive would
// pull the root module's whole dependency graph into its go.sum for a
// few lines).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// runArgs is `docker run` for pod p as container name on network, at ip,
// with volume on the data mount, its Secret directories bound read-only
// and its HTTP port published on loopback.
func (p podRun) runArgs(name, image, network, ip, volume string, hostPort int) []string {
	a := []string{"run", "-d", "--name", name, "--label", "restarea-k8s-sim",
		"--hostname", p.hostname, "--network", network, "--ip", ip, "--network-alias", p.dnsName,
		"--user", p.user, "--stop-signal", "SIGTERM", "--stop-timeout", strconv.Itoa(p.grace),
		"-v", volume + ":" + p.dataMount,
		"-p", fmt.Sprintf("127.0.0.1:%d:%d", hostPort, p.httpPort)}
	for _, b := range p.binds {
		a = append(a, "-v", b)
	}
	if p.readOnly {
		a = append(a, "--read-only")
	}
	for _, c := range p.capDrop {
		a = append(a, "--cap-drop", c)
	}
	if p.noNewPrivileges {
		a = append(a, "--security-opt", "no-new-privileges")
	}
	for _, kv := range p.env {
		a = append(a, "-e", kv)
	}
	return append(append(a, image), p.args...)
}
