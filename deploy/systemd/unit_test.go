package systemd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

const (
	unitFile = "restarea.service"
	envFile  = "restarea.env"
	// execPath is where the unit expects the binary.
	execPath = "/usr/local/bin/restarea"
	// minStop is the least TimeoutStopSec that lets a leader hand over (up
	// to 5 s) and open requests drain (up to 5 s) before SIGKILL, with room
	// for a loaded machine.
	minStop = 20 * time.Second
)

// unit is a parsed unit file: section → key → values in file order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case strings.HasSuffix(line, `\`):
			t.Fatalf("%s:%d: continuation lines are not used in this unit (keep it greppable)", path, lineNo)
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("%s:%d: not KEY=VALUE inside a section: %q", path, lineNo, line)
		}
		key = strings.TrimSpace(key)
		u[section][key] = append(u[section][key], strings.TrimSpace(value))
	}
	return u
}

// get returns the last value of key (systemd's rule for single-valued
// settings) and whether it is set at all.
func (u unit) get(section, key string) (string, bool) {
	v := u[section][key]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "yes", "true", "on", "1":
		return true
	}
	return false
}

// parseSeconds reads a systemd time span of the forms this unit uses:
// "30s", "2min", "1min 30s", "90".
func parseSeconds(v string) (time.Duration, error) {
	var total time.Duration
	for _, f := range strings.Fields(v) {
		i := strings.IndexFunc(f, func(r rune) bool { return r < '0' || r > '9' })
		num, unitName := f, "s"
		if i >= 0 {
			num, unitName = f[:i], f[i:]
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			return 0, fmt.Errorf("time span %q: %v", v, err)
		}
		scale := map[string]time.Duration{"s": time.Second, "sec": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour}[unitName]
		if scale == 0 {
			return 0, fmt.Errorf("time span %q: unit %q", v, unitName)
		}
		total += time.Duration(n) * scale
	}
	return total, nil
}

// The directives the README's walkthrough relies on are present with the
// values it states.
func TestUnitDirectives(t *testing.T) {
	u := parseUnit(t, unitFile)
	want := func(section, key string, ok func(string) bool, what string) {
		t.Helper()
		v, set := u.get(section, key)
		if !set || !ok(v) {
			t.Errorf("[%s] %s=%q: want %s", section, key, v, what)
		}
	}
	eq := func(s string) func(string) bool { return func(v string) bool { return v == s } }
	contains := func(s string) func(string) bool {
		return func(v string) bool { return strings.Contains(" "+v+" ", " "+s+" ") }
	}

	want("Unit", "Wants", contains("network-online.target"), "network-online.target")
	want("Unit", "After", contains("network-online.target"), "network-online.target")
	want("Service", "ExecStart", eq(execPath+" serve"), execPath+" serve (flags come from the environment)")
	want("Service", "User", func(v string) bool { return v != "" && v != "root" && v != "0" }, "a dedicated user")
	want("Service", "Group", func(v string) bool { return v != "" && v != "root" && v != "0" }, "a dedicated group")
	want("Service", "StateDirectory", eq("restarea"), "restarea (/var/lib/restarea)")
	want("Service", "EnvironmentFile", eq("/etc/restarea/restarea.env"), "the example's install path")
	want("Service", "Environment", eq("RESTAREA_DATA_DIR=/var/lib/restarea"), "the data dir in the StateDirectory")
	for _, key := range []string{"NoNewPrivileges", "ProtectHome", "PrivateTmp", "PrivateDevices"} {
		want("Service", key, isTrue, "yes")
	}
	want("Service", "ProtectSystem", eq("strict"), "strict")
	want("Service", "Restart", eq("on-failure"), "on-failure")
	want("Service", "CapabilityBoundingSet", eq(""), "empty (no capabilities: the ports are above 1024)")
	want("Service", "LimitNOFILE", func(v string) bool { n, err := strconv.Atoi(v); return err == nil && n >= 65536 }, "at least 65536")
	want("Service", "TimeoutStopSec", func(v string) bool { d, err := parseSeconds(v); return err == nil && d >= minStop },
		fmt.Sprintf("at least %v for the leader hand-over", minStop))
	want("Install", "WantedBy", contains("multi-user.target"), "multi-user.target")
}

func TestMain(m *testing.M) { testkit.Main(m) }

// serveFlags lists the flags of `restarea serve`, as its -h prints them.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	bin := testkit.Binary(t) // built before the bound starts: a first build is slow on a busy machine
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "-h")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9][a-z0-9-]*)`).FindAllStringSubmatch(stderr.String(), -1) {
		flags[m[1]] = true
	}
	if !flags["data-dir"] || !flags["tls-cert"] || len(flags) < 20 {
		t.Fatalf("could not read serve's flags from -h (%d found):\n%s", len(flags), stderr.String())
	}
	return flags
}

var envVarRE = regexp.MustCompile(`RESTAREA_[A-Z0-9_]+`)

// Every RESTAREA_* variable in the environment file example (comments
// included) and in the unit names a real flag of `restarea serve`, none is
// set twice, and the example gives the cluster secret as a file and all
// three TLS files.
func TestEnvironmentNamesServeFlags(t *testing.T) {
	flags := serveFlags(t)
	flagOf := func(v string) string {
		return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(v, "RESTAREA_")), "_", "-")
	}
	check := func(file string) []string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, v := range envVarRE.FindAllString(string(b), -1) {
			if !flags[flagOf(v)] {
				t.Errorf("%s: %s names no flag of restarea serve (--%s)", file, v, flagOf(v))
			}
			names = append(names, v)
		}
		return names
	}
	if len(check(unitFile)) == 0 {
		t.Errorf("%s sets no RESTAREA_ variable", unitFile)
	}
	check(envFile)

	// The assignments themselves: KEY=VALUE lines, each key once.
	b, _ := os.ReadFile(envFile)
	set := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !envVarRE.MatchString(k) || envVarRE.FindString(k) != k {
			t.Errorf("%s:%d: not RESTAREA_NAME=VALUE: %q", envFile, i+1, line)
			continue
		}
		if _, dup := set[k]; dup {
			t.Errorf("%s:%d: %s is set twice", envFile, i+1, k)
		}
		set[k] = v
	}
	for _, k := range []string{"RESTAREA_CLUSTER_SECRET_FILE", "RESTAREA_TLS_CERT", "RESTAREA_TLS_KEY", "RESTAREA_TLS_CA",
		"RESTAREA_JOIN", "RESTAREA_BOOTSTRAP_EXPECT", "RESTAREA_RAFT_ADDR", "RESTAREA_ADVERTISE_URL", "RESTAREA_NODE_ID"} {
		if set[k] == "" {
			t.Errorf("%s does not set %s", envFile, k)
		}
	}
	if _, ok := set["RESTAREA_CLUSTER_SECRET"]; ok {
		t.Errorf("%s sets the cluster secret inline; give it as a file (RESTAREA_CLUSTER_SECRET_FILE)", envFile)
	}
	if _, ok := set["RESTAREA_DATA_DIR"]; ok {
		t.Errorf("%s sets RESTAREA_DATA_DIR; the unit sets it to its StateDirectory, the only writable path", envFile)
	}
}

// verifyCopy writes the unit with ExecStart pointing at the built binary
// (systemd-analyze verify insists the binary exists) and returns its path.
func verifyCopy(t *testing.T) string {
	t.Helper()
	return verifyCopies(t, unitFile)[0]
}

// verifyCopies writes units, each with ExecStart pointing at the built
// binary when it has one, into one new directory (under their own names,
// so that a timer finds its service) and returns their paths.
func verifyCopies(t *testing.T, units ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, name := range units {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".service") {
			if !bytes.Contains(b, []byte("\nExecStart="+execPath+" ")) {
				t.Fatalf("%s: no ExecStart=%s line to rewrite", name, execPath)
			}
			b = bytes.ReplaceAll(b, []byte("\nExecStart="+execPath+" "), []byte("\nExecStart="+testkit.Binary(t)+" "))
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("SKIP: systemd-analyze is not installed (Debian/Ubuntu: apt-get install systemd); TestUnitDirectives still checked the unit's directives")
	}
	return p
}

// systemd-analyze verify accepts the unit without a single warning (it
// only warns about unknown keys and bad values, exiting 0, so any line
// about the unit fails the test).
func TestUnitVerifies(t *testing.T) {
	verifyUnits(t, unitFile)
}

// verifyUnits runs systemd-analyze verify on copies of units and fails on
// any line about one of them.
func verifyUnits(t *testing.T, units ...string) {
	t.Helper()
	tool := systemdAnalyze(t)
	paths := verifyCopies(t, units...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput()
	var about []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if slices.ContainsFunc(units, func(u string) bool { return strings.Contains(line, u) }) {
			about = append(about, line)
		} else if line != "" {
			t.Logf("systemd-analyze (not about these units): %s", line)
		}
	}
	if err != nil || len(about) > 0 {
		t.Fatalf("systemd-analyze verify %v: %v\n%s", paths, err, out)
	}
}

// The hardening holds up in systemd's own assessment: an exposure of at
// most 2.0 ("OK"; a unit with no hardening scores 9.6).
func TestUnitExposure(t *testing.T) {
	checkExposure(t, unitFile)
}

// checkExposure fails unless systemd-analyze security --offline rates the
// unit at most 2.0.
func checkExposure(t *testing.T, unit string) {
	t.Helper()
	tool := systemdAnalyze(t)
	path := verifyCopies(t, unit)[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, "security", "--offline=yes", "--no-pager", path).CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("--offline")) {
		t.Skipf("SKIP: this systemd-analyze has no `security --offline` (systemd 250+): %s", firstLine(out))
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	score, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("systemd-analyze security exposure of %s: %.1f", unit, score)
	if score > 2.0 {
		t.Fatalf("exposure %.1f, want at most 2.0:\n%s", score, out)
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}
