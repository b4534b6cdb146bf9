package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The media types of an OCI image (image-spec v1.1).
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Binary is where the image holds the executable, and Data the volume
// directory; both as the Dockerfile's COPY instructions name them.
const (
	Binary = "/restarea"
	Data   = "/data"
)

// Image is what one image tarball is built from.
type Image struct {
	Binary  []byte      // the static linux executable, for Arch
	Arch    string      // GOARCH: amd64 or arm64
	Config  ImageConfig // from the Dockerfile (ParseDockerfile)
	Tag     string      // the docker reference: restarea:v1.2.3
	Version string      // the release version, annotated on the manifest
	Commit  string      // the full commit, annotated on the manifest
	Created time.Time   // the commit's time: every mtime and "created"
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type imageConfig struct {
	Created      string      `json:"created"`
	Architecture string      `json:"architecture"`
	OS           string      `json:"os"`
	Config       ImageConfig `json:"config"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
	} `json:"history"`
}

// dockerManifest is one entry of a docker-archive's manifest.json, which
// docker load reads (docker 20.10 does not read index.json).
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// elfMachine is the ELF machine of each GOARCH an image may carry.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func blobPath(d string) string { return "blobs/sha256/" + strings.TrimPrefix(d, "sha256:") }

// parseOwner reads "uid:gid" (numeric: a scratch image has no
// /etc/passwd); "" is root.
func parseOwner(s string) (uid, gid int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	u, g, ok := strings.Cut(s, ":")
	if uid, err = strconv.Atoi(u); err == nil && ok {
		gid, err = strconv.Atoi(g)
	}
	if err != nil || !ok || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("owner %q: want numeric UID:GID", s)
	}
	return uid, gid, nil
}

// checkBinary refuses an executable that is not a linux ELF for arch.
func checkBinary(b []byte, arch string) error {
	want, ok := elfMachine[arch]
	if !ok {
		return fmt.Errorf("arch %q: want amd64 or arm64", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("binary: not an ELF executable: %v", err)
	}
	if f.Machine != want {
		return fmt.Errorf("binary: an ELF for %v, not %s (%v)", f.Machine, arch, want)
	}
	return nil
}

// Layer is the image's one layer, uncompressed: /data (a directory
// owned as the Dockerfile's COPY --chown says) and /restarea (root,
// 0755), in name order, every mtime the commit's.
func (im Image) Layer() ([]byte, error) {
	binOwner, ok := im.Config.Copies[Binary]
	if !ok {
		return nil, fmt.Errorf("Dockerfile: no COPY to %s", Binary)
	}
	dataOwner, ok := im.Config.Copies[Data]
	if !ok {
		return nil, fmt.Errorf("Dockerfile: no COPY to %s", Data)
	}
	bu, bg, err := parseOwner(binOwner)
	if err != nil {
		return nil, err
	}
	du, dg, err := parseOwner(dataOwner)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mt := im.Created.UTC()
	entries := []struct {
		hdr  tar.Header
		body []byte
	}{
		{tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(Data, "/") + "/", Mode: 0o755, Uid: du, Gid: dg, ModTime: mt, Format: tar.FormatUSTAR}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(Binary, "/"), Mode: 0o755, Uid: bu, Gid: bg, Size: int64(len(im.Binary)), ModTime: mt, Format: tar.FormatUSTAR}, im.Binary},
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].hdr.Name < entries[j].hdr.Name })
	for _, e := range entries {
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes the image as one tar: an OCI image layout (oci-layout,
// index.json, blobs/sha256/...) and, beside it, a docker-archive
// manifest.json naming the same blobs, so that both an OCI tool and
// `docker load` read it. The same Image gives the same bytes: entries in
// name order, the commit's time on each, no user or host names, gzip
// without a timestamp.
func (im Image) Write(w io.Writer) error {
	if err := checkBinary(im.Binary, im.Arch); err != nil {
		return err
	}
	if im.Tag == "" || im.Created.IsZero() {
		return fmt.Errorf("image: the tag and the creation time are required")
	}
	layer, err := im.Layer()
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(layer); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	created := im.Created.UTC().Format(time.RFC3339)
	var cfg imageConfig
	cfg.Created, cfg.Architecture, cfg.OS, cfg.Config = created, im.Arch, "linux", im.Config
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "layers", []string{digest(layer)}
	cfg.History = append(cfg.History, struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
	}{created, "make release (internal/release): " + Binary + " and " + Data})
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	annotations := map[string]string{
		"org.opencontainers.image.created":  created,
		"org.opencontainers.image.version":  im.Version,
		"org.opencontainers.image.revision": im.Commit,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.title":    "rest.area",
	}
	man := manifest{
		SchemaVersion: 2, MediaType: mediaManifest,
		Config:      descriptor{MediaType: mediaConfig, Digest: digest(cfgJSON), Size: int64(len(cfgJSON))},
		Layers:      []descriptor{{MediaType: mediaLayer, Digest: digest(gz.Bytes()), Size: int64(gz.Len())}},
		Annotations: annotations,
	}
	manJSON, err := json.Marshal(man)
	if err != nil {
		return err
	}
	ref := im.Tag
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[i+1:]
	}
	idx := index{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{{
		MediaType: mediaManifest, Digest: digest(manJSON), Size: int64(len(manJSON)),
		Annotations: map[string]string{
			"org.opencontainers.image.ref.name": ref,
			"io.containerd.image.name":          im.Tag,
		},
		Platform: &platform{Architecture: im.Arch, OS: "linux"},
	}}}
	idxJSON, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	dockerJSON, err := json.Marshal([]dockerManifest{{
		Config: blobPath(man.Config.Digest), RepoTags: []string{im.Tag}, Layers: []string{blobPath(man.Layers[0].Digest)},
	}})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"oci-layout":                      []byte(`{"imageLayoutVersion":"1.0.0"}`),
		"index.json":                      idxJSON,
		"manifest.json":                   dockerJSON,
		blobPath(man.Config.Digest):       cfgJSON,
		blobPath(man.Layers[0].Digest):    gz.Bytes(),
		blobPath(idx.Manifests[0].Digest): manJSON,
		"blobs/":                          nil,
		"blobs/sha256/":                   nil,
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: im.Created.UTC(), Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}
		if strings.HasSuffix(n, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	return tw.Close()
}
