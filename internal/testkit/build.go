package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/buildinfo"
	"github.com/restarea/restarea/internal/prevrelease"
)

// MainPackage is the import path of the restarea command.
const MainPackage = "github.com/restarea/restarea/cmd/restarea"

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
	inMain    bool
)

// Main runs the package's tests and then removes the binary Binary built.
// A package whose tests call Binary calls it from its TestMain:
//
//	func TestMain(m *testing.M) { testkit.Main(m) }
func Main(m *testing.M) {
	inMain = true
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// Binary returns the path of cmd/restarea built for this platform. It is
// built once per test binary run, into a directory Main removes at the
// end, so it outlives every single test (t.TempDir would not).
func Binary(t testing.TB) string {
	t.Helper()
	if !inMain {
		t.Fatal("testkit.Binary: the package's TestMain must call testkit.Main, which removes the binary")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "restarea-testbin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "restarea")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		buildErr = goBuild(ctx, binPath, nil)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// BuildStatic builds cmd/restarea as the container image carries it: a
// static linux binary for this machine's architecture, without symbols,
// its version set to version. It builds anew on every call, to out.
func BuildStatic(ctx context.Context, t testing.TB, out, version string) {
	t.Helper()
	BuildStamped(ctx, t, out, version, "", "linux", runtime.GOARCH)
}

// BuildStamped builds cmd/restarea as a release does: static
// (CGO_ENABLED=0, -trimpath, no symbols) for goos/goarch, stamped with
// version and commit (internal/buildinfo; an empty one is not stamped).
// It builds anew on every call, to out.
func BuildStamped(ctx context.Context, t testing.TB, out, version, commit, goos, goarch string) {
	t.Helper()
	env := []string{"CGO_ENABLED=0", "GOOS=" + goos, "GOARCH=" + goarch}
	if err := goBuild(ctx, out, env, "-trimpath", "-ldflags", "-s -w "+buildinfo.LinkerFlags(version, commit)); err != nil {
		t.Fatal(err)
	}
}

// ModuleRoot returns the directory of the restarea module's go.mod.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// goBuild runs go build of the command to out from the module root.
func goBuild(ctx context.Context, out string, env []string, flags ...string) error {
	goBin := "go"
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := append(append([]string{"build"}, flags...), "-o", out, MainPackage)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = ModuleRoot()
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, b)
	}
	return nil
}

// PreviousRelease returns the release before this tree and its binary
// (internal/prevrelease: the newest line of RELEASES that is an ancestor
// of HEAD), built once into the module's bin/ and cached there. It skips
// the test when the git history cannot provide it (no repository, a
// shallow clone).
func PreviousRelease(t testing.TB) (prevrelease.Release, string) {
	t.Helper()
	root := ModuleRoot()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rel, path, err := prevrelease.BuildPrevious(ctx, root, filepath.Join(root, "bin"), t.Logf)
	if errors.Is(err, prevrelease.ErrNoHistory) {
		t.Skipf("SKIP: %v", err)
	}
	if err != nil {
		t.Fatalf("the previous release: %v", err)
	}
	return rel, path
}
