package testkit

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/restarea/restarea"
)

// Response is an HTTP answer, its body read whole.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends method url with body (none when empty) and the headers given
// as name, value pairs through c (http.DefaultClient when nil), and reads
// the answer whole. A request that gets no answer fails the test.
func Do(t testing.TB, c *http.Client, method, url, body string, headers ...string) Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// Get is Do of a GET of url through http.DefaultClient.
func Get(t testing.TB, url string) Response {
	t.Helper()
	return Do(t, nil, http.MethodGet, url, "")
}

// PostEntry posts req (a restarea.PostRequest, or arguments as JSON
// would carry them) to the REST API at base, POST /api/v1/entries, and
// returns the answer, the entry of its data member (zero on an error)
// and the code of its error member ("" on success).
func PostEntry(t testing.TB, base string, req any) (Response, restarea.Entry, restarea.Code) {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r := Do(t, nil, http.MethodPost, base+"/api/v1/entries", string(b), "Content-Type", "application/json")
	var out struct {
		Data  restarea.Entry `json:"data"`
		Error struct {
			Code restarea.Code `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(r.Body), &out)
	return r, out.Data, out.Error.Code
}

// Args returns req as the JSON object of its wire format (the arguments
// of the MCP post_entry tool, the body of a REST post), for tests that
// send or change it as JSON.
func Args(req restarea.PostRequest) map[string]any {
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}
