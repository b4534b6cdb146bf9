package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/testkit"
)

// allowedLicences are the licences NOTICE explains as compatible with
// distributing the binary under Apache-2.0, and a phrase of each one's
// text by which the module's licence file is recognised.
var allowedLicences = map[string]string{
	"Apache-2.0":   "Apache License",
	"MIT":          "Permission is hereby granted, free of charge",
	"BSD-2-Clause": "Redistribution and use in source and binary forms",
	"BSD-3-Clause": "Redistribution and use in source and binary forms",
	"ISC":          "Permission to use, copy, modify, and",
	"MPL-2.0":      "Mozilla Public License",
}

// noticeLine is one module in NOTICE: "- PATH VERSION: LICENCE [AND LICENCE]".
var noticeLine = regexp.MustCompile(`^- (\S+) (\S+): (.+)$`)

// releasePlatforms are the platforms make release builds.
var releasePlatforms = []string{"linux/amd64", "linux/arm64"}

// NOTICE lists exactly the third-party modules the released binaries
// link, at the versions they link, each under an allowed licence that
// its licence file in the module cache does state; the project's
// copyright line is there, and LICENSE is the Apache License 2.0.
func TestNoticeListsEveryLinkedModule(t *testing.T) {
	root := testkit.ModuleRoot()
	notice, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(notice, []byte("Copyright 2026 The rest.area Authors")) {
		t.Error("NOTICE lacks the project's copyright line")
	}
	licence, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil || !bytes.Contains(licence, []byte("Apache License\n                           Version 2.0, January 2004")) {
		t.Errorf("LICENSE is not the Apache License 2.0 (%v)", err)
	}
	listed := map[string]string{} // "path version" → licences
	sc := bufio.NewScanner(bytes.NewReader(notice))
	for sc.Scan() {
		m := noticeLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for _, l := range strings.Split(m[3], " AND ") {
			if _, ok := allowedLicences[l]; !ok {
				t.Errorf("NOTICE: %s %s is under %q, not a licence NOTICE explains (%v)", m[1], m[2], l, keys(allowedLicences))
			}
		}
		listed[m[1]+" "+m[2]] = m[3]
	}

	linked := map[string]bool{}
	for _, p := range releasePlatforms {
		goos, goarch, _ := strings.Cut(p, "/")
		out := goCmd(t, root, []string{"GOOS=" + goos, "GOARCH=" + goarch, "CGO_ENABLED=0"},
			"list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", "./cmd/restarea")
		for _, l := range strings.Split(out, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				linked[l] = true
			}
		}
	}
	if len(linked) < 10 {
		t.Fatalf("go list found only %d modules: %v", len(linked), linked)
	}
	for m := range linked {
		if _, ok := listed[m]; !ok {
			t.Errorf("the binary links %s, which NOTICE does not list (add it with its licence)", m)
		}
	}
	for m := range listed {
		if !linked[m] {
			t.Errorf("NOTICE lists %s, which the binary does not link (remove it, or update its version)", m)
		}
	}

	// The licence named is the one the module's files state.
	paths := make([]string, 0, len(listed))
	for m := range listed {
		paths = append(paths, strings.Fields(m)[0])
	}
	sort.Strings(paths)
	dec := json.NewDecoder(strings.NewReader(goCmd(t, root, nil, append([]string{"list", "-m", "-json"}, paths...)...)))
	for dec.More() {
		var mod struct{ Path, Version, Dir string }
		if err := dec.Decode(&mod); err != nil {
			t.Fatal(err)
		}
		if mod.Dir == "" {
			t.Logf("%s %s is not in the module cache: its licence file is not read (go mod download)", mod.Path, mod.Version)
			continue
		}
		text := licenceText(t, mod.Dir)
		for _, l := range strings.Split(listed[mod.Path+" "+mod.Version], " AND ") {
			if !strings.Contains(text, allowedLicences[l]) {
				t.Errorf("NOTICE says %s is under %s, but its licence files do not say so", mod.Path, l)
			}
		}
	}
}

// licenceText is every LICENSE*, LICENCE* and COPYING* file of a module.
func licenceText(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		n := strings.ToUpper(e.Name())
		if strings.HasPrefix(n, "LICENSE") || strings.HasPrefix(n, "LICENCE") || strings.HasPrefix(n, "COPYING") {
			c, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			b.Write(c)
		}
	}
	if b.Len() == 0 {
		t.Errorf("%s: no licence file", dir)
	}
	return b.String()
}

func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

func keys(m map[string]string) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
