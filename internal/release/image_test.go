package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
)

// fakeELF is the smallest file debug/elf reads as an executable for m: a
// header and nothing else.
func fakeELF(t *testing.T, m elf.Machine) []byte {
	t.Helper()
	var b bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(m), Version: uint32(elf.EV_CURRENT), Ehsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	h.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	if err := binary.Write(&b, binary.LittleEndian, &h); err != nil {
		t.Fatal(err)
	}
	return append(b.Bytes(), "a tiny fake binary"...)
}

func repoDockerfile(t *testing.T) ImageConfig {
	t.Helper()
	f, err := os.Open(filepath.Join(testkit.ModuleRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ParseDockerfile(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var commitTime = time.Date(2026, 12, 4, 18, 30, 0, 0, time.UTC)

// The image of a fake binary, for both architectures: a layout every
// link of which holds (index → manifest → config and layer, digests and
// sizes), the Dockerfile's configuration, the layer's two entries and
// their owners, the tarball's entries sorted and stamped with the
// commit's time, and the same bytes when built again.
func TestImageLayout(t *testing.T) {
	cfg := repoDockerfile(t)
	want := ImageConfig{
		User:         "65532:65532",
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8300/tcp": {}},
		Volumes:      map[string]struct{}{"/data": {}},
		Entrypoint:   []string{"/restarea"},
		Cmd:          []string{"serve", "--data-dir", "/data", "--http-addr", "0.0.0.0:8080", "--raft-addr", "127.0.0.1:8300"},
	}
	got := cfg
	got.Copies = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the Dockerfile's configuration: %+v, want %+v", got, want)
	}
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		t.Run(arch, func(t *testing.T) {
			im := Image{Binary: fakeELF(t, machine), Arch: arch, Config: cfg, Tag: "restarea:v1.2.3",
				Version: "v1.2.3", Commit: "c6a03939344b45c9aa971e9385eca294c0dc2199", Created: commitTime}
			var a, b bytes.Buffer
			if err := im.Write(&a); err != nil {
				t.Fatal(err)
			}
			if err := im.Write(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("two builds of the same image differ")
			}
			v, err := Verify(bytes.NewReader(a.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if v.Arch != arch || v.Machine != machine || v.Tag != "restarea:v1.2.3" || !bytes.Equal(v.Binary, im.Binary) {
				t.Fatalf("verified: arch %s machine %v tag %s", v.Arch, v.Machine, v.Tag)
			}
			if !reflect.DeepEqual(v.Config, want) {
				t.Fatalf("image config %+v, want the Dockerfile's %+v", v.Config, want)
			}
			if v.Manifest["org.opencontainers.image.version"] != "v1.2.3" || v.Manifest["org.opencontainers.image.revision"] != im.Commit {
				t.Fatalf("manifest annotations: %v", v.Manifest)
			}
			wantEntries := []LayerEntry{
				{Name: "data/", Type: tar.TypeDir, Mode: 0o755, UID: 65532, GID: 65532},
				{Name: "restarea", Type: tar.TypeReg, Mode: 0o755, UID: 0, GID: 0},
			}
			if !reflect.DeepEqual(v.Entries, wantEntries) {
				t.Fatalf("layer entries %+v, want %+v", v.Entries, wantEntries)
			}
			var names []string
			tr := tar.NewReader(bytes.NewReader(a.Bytes()))
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !h.ModTime.Equal(commitTime) || h.Uid != 0 || h.Uname != "" {
					t.Errorf("%s: mtime %v uid %d uname %q", h.Name, h.ModTime, h.Uid, h.Uname)
				}
				names = append(names, h.Name)
			}
			if len(names) != 8 || !sortedStrings(names) || names[0] != "blobs/" || names[6] != "manifest.json" {
				t.Fatalf("tarball entries: %v", names)
			}
		})
	}
}

func sortedStrings(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

// What must be refused is, with a message naming it: a binary of the
// other architecture, a Dockerfile instruction the image would lack, a
// blob that does not match its digest.
func TestImageRefusals(t *testing.T) {
	cfg := repoDockerfile(t)
	im := Image{Binary: fakeELF(t, elf.EM_X86_64), Arch: "arm64", Config: cfg, Tag: "restarea:v1.2.3", Version: "v1.2.3", Commit: "c", Created: commitTime}
	if err := im.Write(io.Discard); err == nil || !strings.Contains(err.Error(), "not arm64") {
		t.Fatalf("amd64 binary in an arm64 image: %v", err)
	}
	if _, err := ParseDockerfile(strings.NewReader("FROM scratch\nENV A=b\nENTRYPOINT [\"/x\"]\n")); err == nil || !strings.Contains(err.Error(), "line 2 (ENV)") {
		t.Fatalf("ENV: %v", err)
	}
	if _, err := ParseDockerfile(strings.NewReader("FROM alpine\n")); err == nil || !strings.Contains(err.Error(), "scratch") {
		t.Fatalf("FROM alpine: %v", err)
	}
	im.Arch = "amd64"
	var buf bytes.Buffer
	if err := im.Write(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if bytes.Contains(b, []byte("a tiny fake binary")) {
		t.Fatal("the layer is stored uncompressed")
	}
	// index.json with the manifest's size changed: the tar still reads,
	// the link from index to manifest does not hold.
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		body, _ := io.ReadAll(tr)
		if h.Name == "index.json" {
			body = bytes.Replace(body, []byte(`"size":`), []byte(`"size":1`), 1)
			h.Size = int64(len(body))
		}
		tw.WriteHeader(h)
		tw.Write(body)
	}
	tw.Close()
	if _, err := Verify(&out); err == nil || !strings.Contains(err.Error(), "the descriptor says") {
		t.Fatalf("a wrong size in index.json: %v", err)
	}
}

// When docker is there: an image of a real static amd64 build of this
// tree loads with docker 20.10's `docker load` and runs, printing the
// version it was stamped with.
func TestImageDockerLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOARCH != "amd64" {
		t.Skipf("the image is loaded and run on amd64; this is %s", runtime.GOARCH)
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("docker is not available (docker info: %v): the image is not loaded", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const version, commit = "v0.0.0-releasetest", "0123456789abcdef0123456789abcdef01234567"
	bin := filepath.Join(dir, "restarea")
	testkit.BuildStamped(ctx, t, bin, version, commit, "linux", "amd64")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("restarea-releasetest:%d", time.Now().UnixNano())
	im := Image{Binary: b, Arch: "amd64", Config: repoDockerfile(t), Tag: tag, Version: version, Commit: commit, Created: commitTime}
	tarball := filepath.Join(dir, "image.oci.tar")
	f, err := os.Create(tarball)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "docker", "load", "-i", tarball).CombinedOutput(); err != nil || !strings.Contains(string(out), tag) {
		t.Fatalf("docker load: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	out, err := exec.CommandContext(ctx, "docker", "run", "--rm", tag, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "restarea "+version+" "+commit+" ") || !strings.Contains(string(out), "linux/amd64") {
		t.Fatalf("docker run %s version: %v\n%s", tag, err, out)
	}
	insp, err := exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Config.User}} {{.Config.Entrypoint}} {{.Config.Volumes}} {{.Architecture}}", tag).CombinedOutput()
	if err != nil || strings.TrimSpace(string(insp)) != "65532:65532 [/restarea] map[/data:{}] amd64" {
		t.Fatalf("docker image inspect: %v %s", err, insp)
	}
}
