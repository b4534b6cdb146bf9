package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
)

//go:embed static
var staticFiles embed.FS

// asset is one embedded file with the version tag of its content.
type asset struct {
	body        []byte
	contentType string
	version     string
}

// assets are read once: they are part of the binary and never change.
var assets = loadAssets()

func loadAssets() map[string]asset {
	out := map[string]asset{}
	entries, err := fs.ReadDir(staticFiles, "static")
	if err != nil {
		panic("web: embedded static files: " + err.Error())
	}
	for _, e := range entries {
		b, err := staticFiles.ReadFile("static/" + e.Name())
		if err != nil {
			panic("web: embedded static file " + e.Name() + ": " + err.Error())
		}
		ct := mime.TypeByExtension(path.Ext(e.Name()))
		if ct == "" {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = asset{body: b, contentType: ct, version: hex.EncodeToString(sum[:6])}
	}
	return out
}

// assetURL is the address pages link an asset by. The version query
// changes with the content, so the long cache lifetime of a versioned
// address never serves an old file after an upgrade.
func assetURL(name string) string {
	a, ok := assets[name]
	if !ok {
		return "/static/" + name
	}
	return "/static/" + name + "?v=" + a.version
}

// static serves an embedded asset: immutable under its current version,
// briefly cached under any other address.
func (s *site) static(w http.ResponseWriter, r *http.Request) {
	a, ok := assets[r.PathValue("name")]
	if !ok {
		s.errorPage(w, r, http.StatusNotFound, 0, "")
		return
	}
	cc := cacheDoc
	if r.URL.Query().Get("v") == a.version {
		cc = cacheAsset
	}
	serveOK(w, r, a.contentType, cc, a.body)
}
