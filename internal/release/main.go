// Command release builds and checks the image tarballs of a rest.area
// release (make release runs it; docs/releases.md says how to cut one):
//
//	go run ./internal/release image -binary B -arch amd64 -tag restarea:v1.2.3 \
//	    -version v1.2.3 -commit C -created UNIX_SECONDS -o restarea-v1.2.3-linux-amd64.oci.tar
//	go run ./internal/release verify FILE...
//
// An image tarball is an OCI image layout with a docker-archive
// manifest.json beside it (docker 20.10 loads it), one layer holding the
// binary and the data directory, its configuration the Dockerfile's. It
// uses the standard library only, and the same inputs give the same bytes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "image":
		err = runImage(os.Args[2:])
	case "verify":
		err = runVerify(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: release image -binary FILE -arch amd64|arm64 -tag REF -version V -commit C -created UNIX -o FILE [-dockerfile FILE]\n       release verify FILE...")
	os.Exit(2)
}

func runImage(args []string) error {
	fs := flag.NewFlagSet("image", flag.ExitOnError)
	bin := fs.String("binary", "", "the static linux executable the image carries (required)")
	arch := fs.String("arch", "", "its GOARCH: amd64 or arm64 (required)")
	tag := fs.String("tag", "", "the image reference docker load gives it, e.g. restarea:v1.2.3 (required)")
	version := fs.String("version", "", "the release version (required)")
	commit := fs.String("commit", "", "the full commit (required)")
	created := fs.String("created", "", "the commit's time in Unix seconds: every mtime and the image's creation time (required)")
	dockerfile := fs.String("dockerfile", "Dockerfile", "the Dockerfile whose configuration the image takes")
	out := fs.String("o", "", "the tarball to write (required)")
	fs.Parse(args)
	for name, v := range map[string]string{"binary": *bin, "arch": *arch, "tag": *tag, "version": *version, "commit": *commit, "created": *created, "o": *out} {
		if v == "" {
			return fmt.Errorf("image: -%s is required", name)
		}
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil || secs <= 0 {
		return fmt.Errorf("image: -created %q: want the commit's time in Unix seconds", *created)
	}
	df, err := os.Open(*dockerfile)
	if err != nil {
		return err
	}
	cfg, err := ParseDockerfile(df)
	df.Close()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(*bin)
	if err != nil {
		return err
	}
	im := Image{Binary: b, Arch: *arch, Config: cfg, Tag: *tag, Version: *version, Commit: *commit, Created: time.Unix(secs, 0)}
	var buf bytes.Buffer
	if err := im.Write(&buf); err != nil {
		return err
	}
	v, err := Verify(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("the image just built does not verify: %v", err)
	}
	// Written aside and renamed, so a failed run leaves no half tarball.
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".image-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "  image %s linux/%s: %s (%d bytes), %s an ELF for %v\n", v.Tag, v.Arch, *out, buf.Len(), Binary, v.Machine)
	return nil
}

func runVerify(files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("verify: name at least one tarball")
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		v, err := Verify(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		fmt.Printf("%s: %s linux/%s, %s an ELF for %v, version %s, commit %s\n", name, v.Tag, v.Arch, Binary, v.Machine,
			v.Manifest["org.opencontainers.image.version"], v.Manifest["org.opencontainers.image.revision"])
	}
	return nil
}
