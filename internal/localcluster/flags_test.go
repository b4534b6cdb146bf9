package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// oldHelp is the start of v0.1.0's `serve --help`: it predates
// --max-expensive-requests-per-source and the search limits.
const oldHelp = `Usage of serve:
  -admin-token string
    	bearer token for /api/v1/admin/, at least 16 bytes (empty: admin API off)
  -allow-test-clock
    	TESTS ONLY: allow --test-clock-offset-file; never on a production node
  -bootstrap-expect int
    	with --join: form a new cluster once this many nodes are up
  -node-id string
    	node id (default: generated once and kept in the data dir)
  -rate-per-source string
    	post attempts per source, e.g. 30/m (default "30/m")
`

func TestParseHelp(t *testing.T) {
	got := ParseHelp(oldHelp)
	want := map[string]bool{"admin-token": true, "allow-test-clock": false, "bootstrap-expect": true, "node-id": true, "rate-per-source": true}
	if len(got) != len(want) {
		t.Fatalf("flags %v, want %v", got, want)
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("flag %s: %v %v, want takes value %v", name, g, ok, v)
		}
	}
}

// A node of an older binary gets only the flags it lists: a flag it does
// not know is left out with its value, whatever the value looks like.
func TestFilterLeavesOutUnknownFlags(t *testing.T) {
	b := Binary{Flags: ParseHelp(oldHelp)}
	args := []string{"serve", "--node-id=node1", "--max-expensive-requests-per-source=-1", "--allow-test-clock",
		"--search-rate-per-source=30/m", "--rate-per-source", "1000/m", "--admin-token", "-dash-token", "--pprof", "-bootstrap-expect=3"}
	got, err := b.Filter(args)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"serve", "--node-id=node1", "--allow-test-clock", "--rate-per-source", "1000/m", "--admin-token", "-dash-token", "-bootstrap-expect=3"}
	if !slices.Equal(got, want) {
		t.Errorf("filtered\n %q\nwant\n %q", got, want)
	}
	if _, err := b.Filter([]string{"serve", "--node-id"}); err == nil || !strings.Contains(err.Error(), "--node-id has no value") {
		t.Errorf("a known flag without its value: %v", err)
	}
}

// Every flag the cluster itself passes is one "--name=value" argument
// (or a boolean), so that Filter can leave it out.
func TestArgsAreFilterable(t *testing.T) {
	c := &Cluster{opts: Options{Nodes: 3, TestClock: true, Pprof: true, Dir: t.TempDir(), AdminToken: "t", Secret: "s"}}
	if err := c.prepare(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, p := range c.proxies {
			p.close()
		}
	}()
	bools := map[string]bool{"allow-test-clock": true}
	for _, a := range c.args(c.nodes[1])[1:] {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") || (!hasValue && !bools[name]) {
			t.Errorf("argument %q is not --name=value", a)
		}
	}
	// Without the flags the cluster passes, a binary that knows none of
	// them starts with "serve" alone.
	got, err := Binary{Flags: map[string]bool{}}.Filter(c.args(c.nodes[1]))
	if err != nil || !slices.Equal(got, []string{"serve"}) {
		t.Errorf("filtered for a binary without flags: %q %v", got, err)
	}
}

// Inspect reads the flags from the binary's own help, on stderr with
// exit status 2 as package flag prints it, and its version line.
func TestInspect(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "restarea")
	script := "#!/bin/sh\nif [ \"$1 $2\" = \"serve --help\" ]; then cat >&2 <<'END'\n" + oldHelp + "END\nexit 2; fi\n" +
		"if [ \"$1\" = version ]; then echo 'restarea v0.1.0 go1.26.8 linux/amd64'; exit 0; fi\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := Inspect(bin)
	if err != nil {
		t.Fatal(err)
	}
	if b.Version != "restarea v0.1.0 go1.26.8 linux/amd64" || len(b.Flags) != 5 || !b.Flags["node-id"] {
		t.Errorf("inspected %+v", b)
	}
	if _, err := Inspect("/bin/true"); err == nil || !strings.Contains(err.Error(), "lists no flags") {
		t.Errorf("a binary without flags: %v", err)
	}
}
