package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// LayerEntry is one file of the image's layer as Verify found it.
type LayerEntry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
}

// Verified is what Verify read from an image tarball.
type Verified struct {
	Tag      string
	Arch     string
	Config   ImageConfig
	Entries  []LayerEntry
	Binary   []byte      // the layer's /restarea
	Machine  elf.Machine // its ELF machine
	Manifest map[string]string
}

// Verify reads an image tarball as Write makes it and checks what a
// loader relies on: every blob's name is its sha256; index.json names a
// manifest that names a config and a layer of the sizes and digests
// given; the config's diff_id is the digest of the uncompressed layer;
// manifest.json (docker load) names the same config and layer; the
// layer's /restarea is an ELF executable for the config's architecture.
func Verify(r io.Reader) (Verified, error) {
	var v Verified
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return v, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			return v, err
		}
	}
	for name, b := range files {
		if strings.HasPrefix(name, "blobs/sha256/") && blobPath(digest(b)) != name {
			return v, fmt.Errorf("%s: content has digest %s", name, digest(b))
		}
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		return v, fmt.Errorf("oci-layout: %q", files["oci-layout"])
	}
	blob := func(what string, d descriptor, mediaType string) ([]byte, error) {
		b, ok := files[blobPath(d.Digest)]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s %s: no such blob", what, d.Digest)
		case int64(len(b)) != d.Size:
			return nil, fmt.Errorf("%s %s: %d bytes, the descriptor says %d", what, d.Digest, len(b), d.Size)
		case d.MediaType != mediaType:
			return nil, fmt.Errorf("%s %s: media type %q, want %q", what, d.Digest, d.MediaType, mediaType)
		}
		return b, nil
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		return v, fmt.Errorf("index.json: %v", err)
	}
	if idx.SchemaVersion != 2 || len(idx.Manifests) != 1 || idx.Manifests[0].Platform == nil {
		return v, fmt.Errorf("index.json: want one manifest with its platform: %s", files["index.json"])
	}
	v.Tag = idx.Manifests[0].Annotations["io.containerd.image.name"]
	manJSON, err := blob("manifest", idx.Manifests[0], mediaManifest)
	if err != nil {
		return v, err
	}
	var man manifest
	if err := json.Unmarshal(manJSON, &man); err != nil || len(man.Layers) != 1 {
		return v, fmt.Errorf("manifest: want one layer: %s (%v)", manJSON, err)
	}
	v.Manifest = man.Annotations
	cfgJSON, err := blob("config", man.Config, mediaConfig)
	if err != nil {
		return v, err
	}
	gz, err := blob("layer", man.Layers[0], mediaLayer)
	if err != nil {
		return v, err
	}
	var cfg imageConfig
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return v, fmt.Errorf("config: %v", err)
	}
	v.Arch, v.Config = cfg.Architecture, cfg.Config
	if p := idx.Manifests[0].Platform; p.Architecture != cfg.Architecture || p.OS != cfg.OS || cfg.OS != "linux" {
		return v, fmt.Errorf("index.json says %s/%s, the config %s/%s", p.OS, p.Architecture, cfg.OS, cfg.Architecture)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return v, fmt.Errorf("layer: %v", err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		return v, fmt.Errorf("layer: %v", err)
	}
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != digest(layer) {
		return v, fmt.Errorf("config diff_ids %v, the layer is %s", cfg.RootFS.DiffIDs, digest(layer))
	}
	var dm []dockerManifest
	if err := json.Unmarshal(files["manifest.json"], &dm); err != nil || len(dm) != 1 {
		return v, fmt.Errorf("manifest.json: %s (%v)", files["manifest.json"], err)
	}
	if dm[0].Config != blobPath(man.Config.Digest) || len(dm[0].Layers) != 1 || dm[0].Layers[0] != blobPath(man.Layers[0].Digest) ||
		len(dm[0].RepoTags) != 1 || dm[0].RepoTags[0] != v.Tag {
		return v, fmt.Errorf("manifest.json %+v does not name the OCI manifest's config, layer and tag", dm[0])
	}
	lr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return v, fmt.Errorf("layer: %v", err)
		}
		v.Entries = append(v.Entries, LayerEntry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid})
		if "/"+h.Name == Binary {
			if v.Binary, err = io.ReadAll(lr); err != nil {
				return v, err
			}
		}
	}
	if v.Binary == nil {
		return v, fmt.Errorf("layer: no %s", Binary)
	}
	f, err := elf.NewFile(bytes.NewReader(v.Binary))
	if err != nil {
		return v, fmt.Errorf("layer %s: %v", Binary, err)
	}
	v.Machine = f.Machine
	if elfMachine[v.Arch] != f.Machine {
		return v, fmt.Errorf("layer %s is an ELF for %v; the config says %s", Binary, f.Machine, v.Arch)
	}
	return v, nil
}
