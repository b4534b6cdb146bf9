package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// The example ids of the document: the test's live pass sends its
// requests with these replaced by the ids of entries it stored.
const (
	oaExampleQuestion = "0f6b1d1e-3c4a-4b7e-9d2a-6c5e4f3a2b1c"
	oaExampleReply    = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	oaExampleEntry    = "3d2c1b0a-9f8e-4d7c-a6b5-4c3d2e1f0a9b"
	oaExampleVoter    = "node2"
)

// oaRequest is one request the example test sends.
type oaRequest struct {
	op      oaOperation
	what    string
	path    string // with path parameters filled in
	query   url.Values
	body    *string
	token   bool
	headers []string
}

// requests builds the example requests of o: one per request body
// example (and one with no body when the body is optional), each with
// the parameters' examples, and with and without the token as o's
// security allows.
func (d oaDoc) requests(t *testing.T, o oaOperation) []oaRequest {
	t.Helper()
	base := oaRequest{op: o, path: o.path, query: url.Values{}}
	for _, p := range d.parameters(t, o) {
		name := p["name"].(string)
		ex, ok := p["example"]
		if !ok {
			continue // an opaque cursor has examples, not one to send
		}
		val := fmt.Sprint(ex)
		switch p["in"] {
		case "path":
			base.path = strings.ReplaceAll(base.path, "{"+name+"}", url.PathEscape(val))
		case "query":
			base.query.Set(name, val)
		default:
			t.Fatalf("%s: parameter %s in %v", o, name, p["in"])
		}
	}
	var bodies []oaRequest
	if rb, ok := o.op["requestBody"].(map[string]any); ok {
		media := rb["content"].(map[string]any)["application/json"].(map[string]any)
		exs, _ := media["examples"].(map[string]any)
		names := make([]string, 0, len(exs))
		for name := range exs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			em, err := d.deref(exs[name])
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(em["value"])
			s := string(b)
			r := base
			r.what, r.body = "example "+name, &s
			bodies = append(bodies, r)
		}
		if ex, ok := media["example"]; ok {
			b, _ := json.Marshal(ex)
			s := string(b)
			r := base
			r.what, r.body = "example", &s
			bodies = append(bodies, r)
		}
		if rb["required"] != true {
			r := base
			r.what = "no body"
			bodies = append(bodies, r)
		}
	} else {
		base.what = "example"
		bodies = append(bodies, base)
	}
	var out []oaRequest
	for _, r := range bodies {
		if !requiresToken(o) {
			out = append(out, r)
		}
		if acceptsToken(o) {
			r.token = true
			r.what += " with the token"
			out = append(out, r)
		}
	}
	return out
}

// Every operation's example requests, sent to a real node (raft, bbolt,
// the whole HTTP stack), get a status the document lists for the
// operation, with a body of the documented schema, an error code the
// response lists and the headers it declares. The requests are sent as
// written (their example ids name nothing on a fresh node) and again
// with the example ids replaced by stored entries'. Admin operations are
// also sent without the token, and state-changing ones from another
// site's page.
func TestOpenAPIExamplesAgainstNode(t *testing.T) {
	d, raw := loadOpenAPI(t)
	n := testnode.Start(t, testnode.WithAdminToken(oaToken))
	base := n.URL()
	// A fresh node switches its log format moments after it forms (and
	// audits operator actions from format 3) and builds its search index:
	// the examples are sent to the node as it then runs.
	testnode.WaitLogFormat(t, n, 3)
	testkit.Eventually(t, 30*time.Second, "the search index to be built", func() error {
		if r := testkit.Get(t, base+"/api/v1/search?q=ready"); r.Status != http.StatusOK {
			return fmt.Errorf("search answers %d: %s", r.Status, r.Body)
		}
		return nil
	})

	post := func(typ, parent, title string) string {
		return testnode.Post(t, n, restarea.PostRequest{RequestID: uuid.NewString(), Type: typ, ParentID: parent,
			Title: title, Body: "How do I retry a lost post without posting twice?", Actor: restarea.Actor{Name: "docs-agent"},
			SubmissionMode: restarea.ModeAutonomous}).Entry.ID
	}
	q := post(restarea.TypeQuestion, "", "Retrying a lost post")
	reply := post(restarea.TypeReply, q, "")
	// live replaces the example ids; each request that names the example
	// entry (hide, unhide, delete) gets an entry of its own, so that no
	// operation's answer depends on which ran first.
	live := func(r oaRequest) oaRequest {
		text := r.path
		if r.body != nil {
			text += *r.body
		}
		entry := oaExampleEntry
		if strings.Contains(text, oaExampleEntry) {
			entry = post(restarea.TypeQuestion, "", "An entry for "+r.op.String())
		}
		rep := strings.NewReplacer(oaExampleQuestion, q, oaExampleReply, reply, oaExampleEntry, entry,
			`"`+oaExampleVoter+`"`, `"`+n.ID()+`"`)
		r.path = rep.Replace(r.path)
		if r.body != nil {
			b := rep.Replace(*r.body)
			r.body = &b
		}
		r.what += ", live ids"
		return r
	}

	seen := map[string]map[int]bool{} // operation → statuses answered
	send := func(r oaRequest) {
		t.Helper()
		u := base + r.path
		if len(r.query) > 0 {
			u += "?" + r.query.Encode()
		}
		body := ""
		if r.body != nil {
			body = *r.body
		}
		headers := r.headers
		if r.token {
			headers = append(headers, "Authorization", "Bearer "+oaToken)
		}
		resp := testkit.Do(t, nil, r.op.method, u, body, headers...)
		what := fmt.Sprintf("%s (%s): %d", r.op, r.what, resp.Status)
		if seen[r.op.String()] == nil {
			seen[r.op.String()] = map[int]bool{}
		}
		seen[r.op.String()][resp.Status] = true
		for _, e := range d.checkAnswer(r.op, resp, raw) {
			t.Errorf("%s: %s\nbody: %.600s", what, e, resp.Body)
		}
	}

	ops := d.operations(t)
	for _, o := range ops {
		for _, r := range d.requests(t, o) {
			send(r)
			if requiresToken(o) && r.token {
				r.token, r.what = false, r.what+", the token left out"
				send(r)
			}
			if o.method != http.MethodGet {
				r.headers, r.what = []string{"Origin", "https://other.example"}, r.what+", from another site"
				send(r)
			}
		}
	}
	for _, o := range ops {
		for _, r := range d.requests(t, o) {
			send(live(r))
		}
	}

	// Every operation succeeded at least once, but those a single-node
	// cluster cannot carry out.
	cannot := map[string]bool{"DELETE /api/v1/admin/cluster/members/{id}": true}
	for _, o := range ops {
		ok := false
		for s := range seen[o.String()] {
			ok = ok || s < 400
		}
		if !ok && !cannot[o.String()] {
			t.Errorf("%s never succeeded: statuses %v", o, seen[o.String()])
		}
	}
	var report []string
	for _, o := range ops {
		var st []int
		for s := range seen[o.String()] {
			st = append(st, s)
		}
		sort.Ints(st)
		report = append(report, fmt.Sprintf("%s %v", o, st))
	}
	t.Logf("statuses answered:\n%s", strings.Join(report, "\n"))
}

// checkAnswer checks one answer against o's documented responses.
func (d oaDoc) checkAnswer(o oaOperation, resp testkit.Response, raw []byte) []string {
	responses := o.op["responses"].(map[string]any)
	r, ok := responses[strconv.Itoa(resp.Status)]
	if !ok {
		return []string{"the document does not list this status"}
	}
	rm, err := d.deref(r)
	if err != nil {
		return []string{err.Error()}
	}
	var errs []string
	hdrs, _ := rm["headers"].(map[string]any)
	for name, h := range hdrs {
		hm, err := d.deref(h)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		v := resp.Header.Get(name)
		if v == "" {
			errs = append(errs, "header "+name+" is missing")
			continue
		}
		var value any = v
		if hm["schema"].(map[string]any)["type"] == "integer" {
			value = json.Number(v)
		}
		for _, e := range d.validate(hm["schema"], value) {
			errs = append(errs, "header "+name+": "+e)
		}
	}
	content, _ := rm["content"].(map[string]any)
	if len(content) == 0 {
		if resp.Body != "" {
			errs = append(errs, "a body where the document has none")
		}
		return errs
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case content["application/json"] != nil:
		if ct != "application/json; charset=utf-8" {
			return append(errs, "Content-Type "+ct)
		}
		v, err := oaJSON([]byte(resp.Body))
		if err != nil {
			return append(errs, "the body is not JSON: "+err.Error())
		}
		schema := content["application/json"].(map[string]any)["schema"]
		errs = append(errs, d.validate(schema, v)...)
		if resp.Status >= 400 {
			code, _ := v.(map[string]any)["error"].(map[string]any)["code"]
			listed, _ := rm["x-error-codes"].([]any)
			if !slices.ContainsFunc(listed, func(c any) bool { return c == code }) {
				errs = append(errs, fmt.Sprintf("error code %v is not in x-error-codes %v", code, listed))
			}
		}
	case content["application/yaml"] != nil:
		if ct != "application/yaml" || resp.Body != string(raw) {
			errs = append(errs, fmt.Sprintf("Content-Type %q, %d bytes: not the document", ct, len(resp.Body)))
		}
	case content["application/octet-stream"] != nil:
		if ct != "application/octet-stream" || resp.Body == "" {
			errs = append(errs, fmt.Sprintf("Content-Type %q, %d bytes", ct, len(resp.Body)))
		}
	default:
		errs = append(errs, fmt.Sprintf("no check for the media types %v", content))
	}
	return errs
}
