package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// Binary is what a restarea executable says about itself: the flags its
// `serve` accepts and its version line. A cluster may run binaries of
// different releases at once (a rolling upgrade); each node is started
// with only the flags its own binary knows.
type Binary struct {
	Path string
	// Version is the first line of `restarea version`.
	Version string
	// Flags maps each flag `serve --help` lists to whether it takes a
	// value (false: a boolean).
	Flags map[string]bool
}

// Inspect asks binary for `serve --help` and `version`. The help goes to
// stderr with exit status 2 (package flag's -help), so the status is not
// checked: a binary that lists no flags is the error.
func Inspect(binary string) (Binary, error) {
	help, _ := exec.Command(binary, "serve", "--help").CombinedOutput()
	flags := ParseHelp(string(help))
	if len(flags) == 0 {
		return Binary{}, fmt.Errorf("localcluster: %s serve --help lists no flags: %.200q", binary, help)
	}
	b := Binary{Path: binary, Flags: flags}
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		return Binary{}, fmt.Errorf("localcluster: %s version: %w", binary, err)
	}
	b.Version, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	return b, nil
}

// ParseHelp reads the flag list package flag prints: a line "  -name"
// for a boolean, "  -name type" for a flag with a value, each followed
// by indented usage lines.
func ParseHelp(help string) map[string]bool {
	flags := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "  -")
		if !ok || rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '-' {
			continue
		}
		name, typ, _ := strings.Cut(rest, " ")
		flags[name] = strings.TrimSpace(typ) != ""
	}
	return flags
}

// Filter returns args with the flags b does not know left out. A known
// flag written "--name value" keeps its value; an unknown one must be
// written "--name=value" (or be a boolean, "--name"), since its arity is
// not in b's help: this package writes every flag with a value so.
// Arguments that are not flags are kept.
func (b Binary) Filter(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			out = append(out, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := b.Flags[name]
		switch {
		case known && takesValue && !hasValue:
			if i+1 >= len(args) {
				return nil, fmt.Errorf("localcluster: flag %s has no value", a)
			}
			out = append(out, a, args[i+1])
			i++
		case known:
			out = append(out, a)
		}
	}
	return out, nil
}

// binaries caches Inspect per path: a cluster asks each binary once.
type binaries struct {
	mu sync.Mutex
	m  map[string]Binary
}

func (bs *binaries) get(path string) (Binary, error) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m[path]; ok {
		return b, nil
	}
	b, err := Inspect(path)
	if err != nil {
		return Binary{}, err
	}
	if bs.m == nil {
		bs.m = map[string]Binary{}
	}
	bs.m[path] = b
	return b, nil
}

// errNoBinary is SetBinary's answer to an empty path.
var errNoBinary = errors.New("localcluster: a binary path is required")
