package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/api"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/testkit"
)

// These tests (here and in openapi_node_test.go) keep api/openapi.yaml true: it names exactly the routes the
// router serves, its structure and references are sound, every example
// in it fits its schema, and every example request, sent to a real node,
// gets an answer the document lists, in the documented shape.

const oaToken = "openapi-admin-token-0123456789"

// oaMethods are the operations a path item may hold.
var oaMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// oaOperation is one operation of the document.
type oaOperation struct {
	path, method string // method upper case
	op           map[string]any
}

func (o oaOperation) String() string { return o.method + " " + o.path }

// loadOpenAPI reads api/openapi.yaml (the file go:embed puts in the
// binary) and returns it as JSON values: a document that is not also
// JSON-compatible (non-string keys, say) fails here.
func loadOpenAPI(t *testing.T) (oaDoc, []byte) {
	t.Helper()
	raw, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var y any
	if err := yaml.Unmarshal(raw, &y); err != nil {
		t.Fatalf("openapi.yaml is not YAML: %v", err)
	}
	j, err := json.Marshal(y)
	if err != nil {
		t.Fatalf("openapi.yaml does not map onto JSON: %v", err)
	}
	v, err := oaJSON(j)
	if err != nil {
		t.Fatal(err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		t.Fatal("openapi.yaml is not a mapping")
	}
	return oaDoc{root: root}, raw
}

// operations lists the document's operations, sorted by path and method.
func (d oaDoc) operations(t *testing.T) []oaOperation {
	t.Helper()
	paths, ok := d.root["paths"].(map[string]any)
	if !ok || len(paths) == 0 {
		t.Fatal("the document has no paths")
	}
	var ops []oaOperation
	for p, item := range paths {
		im, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("path %s is not an object", p)
		}
		for k, v := range im {
			if !slices.Contains(oaMethods, k) {
				t.Errorf("path %s: member %q is not an operation (the document keeps parameters on operations)", p, k)
				continue
			}
			ops = append(ops, oaOperation{path: p, method: strings.ToUpper(k), op: v.(map[string]any)})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].path != ops[j].path {
			return ops[i].path < ops[j].path
		}
		return ops[i].method < ops[j].method
	})
	return ops
}

// parameters returns an operation's parameters, references resolved.
func (d oaDoc) parameters(t *testing.T, o oaOperation) []map[string]any {
	t.Helper()
	var out []map[string]any
	list, _ := o.op["parameters"].([]any)
	for _, p := range list {
		pm, err := d.deref(p)
		if err != nil {
			t.Fatalf("%s: parameter: %v", o, err)
		}
		out = append(out, pm)
	}
	return out
}

// oaCluster is a ClusterService for building the routing table; it is
// never called.
type oaCluster struct{}

func (oaCluster) ClusterStatus(context.Context) (restarea.ClusterStatus, error) {
	return restarea.ClusterStatus{}, nil
}
func (oaCluster) RemoveMember(context.Context, string) error       { return nil }
func (oaCluster) TransferLeadership(context.Context, string) error { return nil }
func (oaCluster) WriteBackup(context.Context, io.Writer) (int64, error) {
	return 0, nil
}
func (oaCluster) FinalizeUpgrade(context.Context) (restarea.UpgradeResult, error) {
	return restarea.UpgradeResult{}, nil
}

// The document names exactly the routes the router serves, with every
// conditional route (search, cluster, admin) switched on; the router's
// list comes from the registrations themselves (api.ServedRoutes).
func TestOpenAPINamesEveryRoute(t *testing.T) {
	d, _ := loadOpenAPI(t)
	f := testkit.NewFakeService()
	served := api.ServedRoutes(api.Config{Service: f, Admin: f, AdminToken: oaToken, Search: f, Cluster: oaCluster{}})
	var documented []string
	for _, o := range d.operations(t) {
		documented = append(documented, o.String())
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("the router serves %s, which openapi.yaml does not describe", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("openapi.yaml describes %s, which the router does not serve", r)
		}
	}
	for _, conditional := range []string{"GET /api/v1/search", "GET /api/v1/cluster", "GET /api/v1/admin/entries", "GET /api/v1/admin/backup"} {
		if !slices.Contains(served, conditional) {
			t.Errorf("the router was built without %s: %v", conditional, served)
		}
	}
	t.Logf("%d operations on %d paths", len(documented), len(d.root["paths"].(map[string]any)))
}

// The document is sound: an OpenAPI 3.1 document whose operations all
// have an operationId (unique), a summary and responses; whose path
// templates and path parameters agree; whose error answers reference the
// one Error schema and list their codes, each of which has the status it
// is documented under (httpx.Status); whose admin operations require the
// token and list 401; and whose every $ref resolves.
func TestOpenAPIDocumentIsSound(t *testing.T) {
	d, _ := loadOpenAPI(t)
	if d.root["openapi"] != "3.1.0" {
		t.Errorf("openapi is %v, want 3.1.0", d.root["openapi"])
	}
	info, _ := d.root["info"].(map[string]any)
	if info["title"] == nil || info["version"] == nil {
		t.Errorf("info lacks title or version: %v", info)
	}

	// Every $ref anywhere resolves.
	refs := 0
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				refs++
				if _, err := d.resolve(ref); err != nil {
					t.Errorf("%s: %v", at, err)
				}
			}
			for k, c := range x {
				walk(c, at+"/"+k)
			}
		case []any:
			for i, c := range x {
				walk(c, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(d.root, "#")
	if refs < 50 {
		t.Errorf("only %d $refs: the walk is broken", refs)
	}

	// The error codes the schema allows are the ones the status table
	// knows.
	codeSchema, err := d.deref(map[string]any{"$ref": "#/components/schemas/ErrorCode"})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, c := range codeSchema["enum"].([]any) {
		codes[c.(string)] = true
		if c != string(restarea.CodeInternal) && httpx.Status(restarea.Code(c.(string))) == http.StatusInternalServerError {
			t.Errorf("ErrorCode %q is not in httpx's status table", c)
		}
	}

	pathParam := regexp.MustCompile(`\{([^}]+)\}`)
	ids := map[string]string{}
	for _, o := range d.operations(t) {
		id, _ := o.op["operationId"].(string)
		if id == "" {
			t.Errorf("%s has no operationId", o)
		} else if prev, dup := ids[id]; dup {
			t.Errorf("%s and %s share operationId %s", prev, o, id)
		}
		ids[id] = o.String()
		if s, _ := o.op["summary"].(string); s == "" {
			t.Errorf("%s has no summary", o)
		}

		// Path templates and path parameters agree; every path
		// parameter is required and has an example.
		inPath := map[string]bool{}
		for _, m := range pathParam.FindAllStringSubmatch(o.path, -1) {
			inPath[m[1]] = true
		}
		for _, p := range d.parameters(t, o) {
			name, _ := p["name"].(string)
			if p["schema"] == nil {
				t.Errorf("%s: parameter %s has no schema", o, name)
			}
			if p["in"] != "path" {
				continue
			}
			if !inPath[name] {
				t.Errorf("%s: path parameter %s is not in the path", o, name)
			}
			if p["required"] != true || p["example"] == nil {
				t.Errorf("%s: path parameter %s must be required and have an example", o, name)
			}
			delete(inPath, name)
		}
		for name := range inPath {
			t.Errorf("%s: {%s} has no path parameter", o, name)
		}

		// A required body has an example to send.
		if rb, ok := o.op["requestBody"].(map[string]any); ok {
			media, _ := rb["content"].(map[string]any)["application/json"].(map[string]any)
			if media == nil || (media["example"] == nil && media["examples"] == nil) {
				t.Errorf("%s: the request body has no application/json example", o)
			}
		}

		// Security: admin operations require the token and say 401.
		responses, _ := o.op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s has no responses", o)
		}
		admin := strings.HasPrefix(o.path, "/api/v1/admin/")
		if admin != requiresToken(o) {
			t.Errorf("%s: requires the admin token %v, want %v", o, requiresToken(o), admin)
		}
		if _, ok := responses["401"]; admin != ok {
			t.Errorf("%s: lists 401 %v, want %v", o, ok, admin)
		}
		if o.method != http.MethodGet {
			if _, ok := responses["403"]; !ok {
				t.Errorf("%s changes state but does not list 403 forbidden", o)
			}
		}
		if _, ok := responses["500"]; !ok {
			t.Errorf("%s does not list 500 internal", o)
		}

		for status, r := range responses {
			code, err := strconv.Atoi(status)
			if err != nil || code < 100 || code > 599 {
				t.Errorf("%s: response key %q is not a status", o, status)
				continue
			}
			rm, err := d.deref(r)
			if err != nil {
				t.Errorf("%s %s: %v", o, status, err)
				continue
			}
			if rm["description"] == nil {
				t.Errorf("%s %s: no description", o, status)
			}
			if code < 400 {
				continue
			}
			schema, _ := rm["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			if schema["$ref"] != "#/components/schemas/Error" {
				t.Errorf("%s %s: an error answer's schema is %v, want the Error schema", o, status, schema)
			}
			listed, _ := rm["x-error-codes"].([]any)
			if len(listed) == 0 {
				t.Errorf("%s %s: no x-error-codes", o, status)
			}
			for _, c := range listed {
				if !codes[c.(string)] {
					t.Errorf("%s %s: x-error-codes names %v, not an ErrorCode", o, status, c)
				}
				if got := httpx.Status(restarea.Code(c.(string))); got != code {
					t.Errorf("%s %s: code %v is answered %d, not %d", o, status, c, got, code)
				}
			}
		}
	}
}

// requiresToken reports whether every security requirement of o names
// the admin token (an empty requirement {} makes it optional).
func requiresToken(o oaOperation) bool {
	reqs, _ := o.op["security"].([]any)
	if len(reqs) == 0 {
		return false
	}
	for _, r := range reqs {
		if _, ok := r.(map[string]any)["adminToken"]; !ok {
			return false
		}
	}
	return true
}

// acceptsToken reports whether o has a security requirement naming the
// admin token.
func acceptsToken(o oaOperation) bool {
	reqs, _ := o.op["security"].([]any)
	for _, r := range reqs {
		if _, ok := r.(map[string]any)["adminToken"]; ok {
			return true
		}
	}
	return false
}

// Every example in the document fits the schema beside it: request and
// answer bodies, and parameters.
func TestOpenAPIExamplesFitTheirSchemas(t *testing.T) {
	d, _ := loadOpenAPI(t)
	checked := 0
	check := func(at string, schema, example any) {
		checked++
		for _, e := range d.validate(schema, example) {
			t.Errorf("%s: example: %s", at, e)
		}
	}
	checkMedia := func(at string, content any) {
		cm, _ := content.(map[string]any)
		for mt, m := range cm {
			mm := m.(map[string]any)
			if ex, ok := mm["example"]; ok {
				check(at+" "+mt, mm["schema"], ex)
			}
			exs, _ := mm["examples"].(map[string]any)
			for name, ex := range exs {
				em, err := d.deref(ex)
				if err != nil {
					t.Errorf("%s %s %s: %v", at, mt, name, err)
					continue
				}
				check(at+" "+mt+" "+name, mm["schema"], em["value"])
			}
		}
	}
	for _, o := range d.operations(t) {
		for _, p := range d.parameters(t, o) {
			at := fmt.Sprintf("%s parameter %v", o, p["name"])
			if ex, ok := p["example"]; ok {
				check(at, p["schema"], ex)
			}
			exs, _ := p["examples"].(map[string]any)
			for name, ex := range exs {
				check(at+" "+name, p["schema"], ex.(map[string]any)["value"])
			}
		}
		if rb, ok := o.op["requestBody"].(map[string]any); ok {
			checkMedia(o.String()+" request", rb["content"])
		}
		for status, r := range o.op["responses"].(map[string]any) {
			rm, err := d.deref(r)
			if err != nil {
				t.Fatal(err)
			}
			checkMedia(o.String()+" "+status, rm["content"])
		}
	}
	if checked < 40 {
		t.Errorf("only %d examples checked", checked)
	}
	t.Logf("%d examples fit their schemas", checked)
}

// The validator refuses what it should: a test of the test helper.
func TestOpenAPIValidatorRefuses(t *testing.T) {
	d, _ := loadOpenAPI(t)
	schema := map[string]any{"$ref": "#/components/schemas/PublicEntryAnswer"}
	good := `{"data": {"id": "0f6b1d1e-3c4a-4b7e-9d2a-6c5e4f3a2b1c", "type": "question", "title": "T", "body": "B",
		"actor": {"name": "a"}, "submission_mode": "manual", "channel": "http", "created_at": "2026-12-02T17:15:09.683Z",
		"visible": true, "by_operator": false}}`
	if errs := d.validate(schema, mustOAJSON(t, good)); len(errs) != 0 {
		t.Fatalf("a valid entry is refused: %v", errs)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"an unknown member", `"by_operator": false`, `"by_operator": false, "request_id": "x"`, "request_id"},
		{"a missing member", `"body": "B",`, ``, `"body" is missing`},
		{"a wrong type", `"visible": true`, `"visible": "yes"`, "not of type"},
		{"a value outside the enum", `"channel": "http"`, `"channel": "smtp"`, "not one of"},
		{"a malformed UUID", `"id": "0f6b1d1e-3c4a`, `"id": "zz6b1d1e-3c4a`, "not a UUID"},
		{"a malformed time", `"2026-12-02T17:15:09.683Z"`, `"yesterday"`, "date-time"},
		{"a string too long", `"title": "T"`, `"title": "` + strings.Repeat("é", 201) + `"`, "maxLength"},
	} {
		bad := strings.Replace(good, tc.from, tc.to, 1)
		if bad == good {
			t.Fatalf("%s: the replacement changed nothing", tc.name)
		}
		errs := d.validate(schema, mustOAJSON(t, bad))
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%s: errors %v, want one mentioning %q", tc.name, errs, tc.want)
		}
	}
	if errs := d.validate(map[string]any{"$ref": "#/components/schemas/NextCursor"}, nil); len(errs) != 0 {
		t.Errorf("null next_cursor refused: %v", errs)
	}
	if errs := d.validate(map[string]any{"$ref": "#/components/schemas/NextCursor"}, json.Number("1")); len(errs) == 0 {
		t.Error("a numeric next_cursor is accepted")
	}
	if errs := d.validate(map[string]any{"uniqueItems": true}, []any{}); len(errs) == 0 {
		t.Error("an unknown keyword is ignored")
	}
}

func mustOAJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := oaJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// GET /api/v1/openapi.yaml answers the embedded document byte for byte,
// as YAML, with a strong ETag that a revalidation matches; HEAD answers
// its headers.
func TestOpenAPIServedByteForByte(t *testing.T) {
	_, raw := loadOpenAPI(t)
	srv := httptest.NewServer(api.New(api.Config{Service: testkit.NewFakeService(), Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	get := testkit.Do(t, srv.Client(), http.MethodGet, srv.URL+api.OpenAPIPath, "")
	if get.Status != http.StatusOK || get.Body != string(raw) {
		t.Fatalf("GET: status %d, %d bytes; want 200 and openapi.yaml's %d bytes", get.Status, len(get.Body), len(raw))
	}
	if ct := get.Header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type %q, want application/yaml", ct)
	}
	etag := get.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || get.Header.Get("Cache-Control") == "" {
		t.Errorf("ETag %q, Cache-Control %q", etag, get.Header.Get("Cache-Control"))
	}
	head := testkit.Do(t, srv.Client(), http.MethodHead, srv.URL+api.OpenAPIPath, "")
	if head.Status != http.StatusOK || head.Body != "" || head.Header.Get("Content-Length") != strconv.Itoa(len(raw)) ||
		head.Header.Get("ETag") != etag {
		t.Errorf("HEAD: status %d, %d bytes, headers %v", head.Status, len(head.Body), head.Header)
	}
	again := testkit.Do(t, srv.Client(), http.MethodGet, srv.URL+api.OpenAPIPath, "", "If-None-Match", etag)
	if again.Status != http.StatusNotModified || again.Body != "" {
		t.Errorf("revalidation: status %d, %d bytes; want 304 and none", again.Status, len(again.Body))
	}
	other := testkit.Do(t, srv.Client(), http.MethodGet, srv.URL+api.OpenAPIPath, "", "If-None-Match", `"other"`)
	if other.Status != http.StatusOK || other.Body != string(raw) {
		t.Errorf("another ETag: status %d, want 200 and the document", other.Status)
	}
	post := testkit.Do(t, srv.Client(), http.MethodPost, srv.URL+api.OpenAPIPath, "")
	if post.Status != http.StatusMethodNotAllowed || post.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: status %d, Allow %q; want 405 and GET, HEAD", post.Status, post.Header.Get("Allow"))
	}
}
