package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/decode"
	"github.com/restarea/restarea/internal/httpx"
	"github.com/restarea/restarea/internal/testkit"
)

// FuzzPostEntries sends arbitrary bodies to POST /api/v1/entries: whatever
// the bytes, the answer is JSON, never a 5xx, and a 201 only for a body the
// domain decoder accepts. It calls the handler directly rather than over a
// socket so that each input costs microseconds.
func FuzzPostEntries(f *testing.F) {
	valid := question("t")
	seeds := []string{
		valid,
		strings.Replace(valid, `"question"`, `"reply","parent_id":"`+strings.ToUpper(parentID)+`"`, 1),
		"",
		" ",
		"{",
		"null",
		"[]",
		`"x"`,
		"{}",
		valid + "{}",
		strings.Replace(valid, "Why?", `\ud800`, 1),
		strings.Replace(valid, "Why?", `\ud83d\ude00 ok`, 1),
		strings.Replace(valid, "Why?", "\xc3\x28", 1),
		strings.Replace(valid, `"body":"Why?"`, `"body":1e999`, 1),
		strings.Replace(valid, `"body":"Why?"`, `"body":{"nested":[1,2,{"deep":null}]}`, 1),
		strings.Replace(valid, `"title":"t"`, `"title":"`+strings.Repeat("e\u0301", 150)+`"`, 1),
		strings.Replace(valid, "Why?", "line\r\nbreak\rhere", 1),
		`{"request_id":"` + requestID + `","request_id":"` + requestID + `"}`,
		"\ufeff" + valid,
		strings.Repeat("[", 10000),
		strings.Replace(valid, "Why?", `a\u0000b`, 1),
		strings.Replace(valid, "Why?", `\u001b[2J\r\n`, 1),
		strings.Replace(valid, `"name":"agent"`, `"name":"agent\u202e"`, 1),
		strings.Replace(valid, strings.ToUpper(requestID), "00000000-0000-0000-0000-000000000000", 1),
		strings.Replace(valid, strings.ToUpper(requestID), "c232ab00-9414-11ec-b3c8-9f6bdeced846", 1),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	fake := testkit.NewFakeService()
	fake.Add(restarea.Entry{ID: parentID, Type: restarea.TypeQuestion, Title: "t", Body: "b", Visible: true})
	h := New(Config{Service: fake, Logger: discard, MaxBodyBytes: 8 << 10})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/entries", bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body)
		}
		var shape struct {
			Data  json.RawMessage  `json:"data"`
			Error *httpx.ErrorBody `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &shape); err != nil {
			t.Fatalf("answer is not JSON: %v: %s", err, rec.Body)
		}
		var decoded restarea.PostRequest
		decodeErr := decode.JSON(body, &decoded)
		if decodeErr == nil {
			_, decodeErr = decoded.Normalize()
		}
		switch rec.Code {
		case http.StatusCreated, http.StatusOK, http.StatusConflict: // a new post, a replay, a request_id seen with other content
			if decodeErr != nil || (shape.Data == nil) == (rec.Code != http.StatusConflict) {
				t.Fatalf("%d for a body the decoder refuses (%v): %q", rec.Code, decodeErr, body)
			}
		case http.StatusNotFound, http.StatusUnprocessableEntity: // a reply whose parent is missing or a reply
			if decodeErr != nil || shape.Error == nil || (shape.Error.Code != restarea.CodeParentNotFound && shape.Error.Code != restarea.CodeInvalidParent) {
				t.Fatalf("%d %s for %q (decoder: %v)", rec.Code, rec.Body, body, decodeErr)
			}
		case http.StatusBadRequest:
			if decodeErr == nil || shape.Error == nil || shape.Error.Code != restarea.CodeInvalidRequest {
				t.Fatalf("400 %s for a body the decoder accepts: %q", rec.Body, body)
			}
		case http.StatusRequestEntityTooLarge:
			if len(body) <= 8<<10 {
				t.Fatalf("413 for %d bytes", len(body))
			}
		default:
			t.Fatalf("unexpected status %d: %s", rec.Code, rec.Body)
		}
	})
}
