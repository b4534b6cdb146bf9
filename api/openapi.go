package api

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
)

// OpenAPIPath is where the API serves its OpenAPI document.
const OpenAPIPath = "/api/v1/openapi.yaml"

// openAPIDoc is api/openapi.yaml, the OpenAPI 3.1 description of every
// route this package serves. The binary carries it, so a node describes
// the API it runs, not the newest one; the package's tests keep the two
// in step (openapi_test.go, openapi_node_test.go).
//
//go:embed openapi.yaml
var openAPIDoc []byte

// openAPIETag is a strong validator of the document: equal bytes, equal
// tag, so a client revalidates across an upgrade that changed it.
var openAPIETag = func() string {
	sum := sha256.Sum256(openAPIDoc)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}()

// openAPICache lets a client keep the document for a while, as the guide
// and llms.txt are kept; it changes only with the binary.
const openAPICache = "public, max-age=300"

// getOpenAPI is GET (and HEAD) /api/v1/openapi.yaml: the embedded document
// byte for byte, or 304 when If-None-Match names its ETag. It reads no
// state, so it stays out of the bound on expensive requests
// (httpx.Expensive).
func (s *server) getOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("ETag", openAPIETag)
	h.Set("Cache-Control", openAPICache)
	h.Set("X-Content-Type-Options", "nosniff")
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 && etagMatch(strings.Join(inm, ","), openAPIETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/yaml")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDoc)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(openAPIDoc)
	}
}

// etagMatch reports whether an If-None-Match value names etag, compared
// weakly as RFC 9110 asks for If-None-Match (a W/ prefix is ignored).
func etagMatch(header, etag string) bool {
	for _, c := range strings.Split(header, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || strings.TrimPrefix(c, "W/") == etag {
			return true
		}
	}
	return false
}
