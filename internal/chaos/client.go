package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/restarea/restarea"
)

// Channels a call can take.
const (
	ChannelREST = "http"
	ChannelMCP  = "mcp"
)

// answer is what one call learned.
type answer struct {
	status     int
	outcome    string
	entryID    string
	retryAfter time.Duration
	err        string
}

// ContentHash identifies the content of a post (docs/contract.md §1: every
// client field but request_id). Content must be normalised; the workload
// only sends ASCII text without carriage returns, which is.
func ContentHash(c restarea.Content) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// newHTTPClient returns the client every call shares. It has no overall
// timeout: each call carries its own deadline, which is how the workload
// abandons calls on purpose.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// envelope is the REST answer shape and the MCP structured content.
type envelope struct {
	HTTPStatus int             `json:"http_status"`
	Data       json.RawMessage `json:"data"`
	Error      *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	RetryAfterSeconds int `json:"retry_after_seconds"`
}

type dataEntry struct {
	ID       string `json:"id"`
	Replayed *bool  `json:"replayed"`
}

// classifyPost turns a post's status and body into an answer.
func classifyPost(status int, env envelope) answer {
	a := answer{status: status, retryAfter: time.Duration(env.RetryAfterSeconds) * time.Second}
	var d dataEntry
	if len(env.Data) > 0 {
		json.Unmarshal(env.Data, &d)
	}
	a.entryID = d.ID
	switch {
	case status == http.StatusCreated && d.ID != "" && d.Replayed != nil && !*d.Replayed:
		a.outcome = OutcomeCreated
	case status == http.StatusOK && d.ID != "" && d.Replayed != nil && *d.Replayed:
		a.outcome = OutcomeReplayed
	case status == http.StatusConflict:
		a.outcome = OutcomeConflict
	default:
		a.outcome = classifyOther(status)
	}
	if a.outcome == OutcomeUnexpected {
		a.err = describe(env)
	}
	return a
}

// classifyRead turns a read's status and body into an answer.
func classifyRead(status int, env envelope) answer {
	a := answer{status: status, retryAfter: time.Duration(env.RetryAfterSeconds) * time.Second}
	switch status {
	case http.StatusOK:
		var d dataEntry
		json.Unmarshal(env.Data, &d)
		a.entryID, a.outcome = d.ID, OutcomeFound
	case http.StatusNotFound:
		a.outcome = OutcomeNotFound
	default:
		a.outcome = classifyOther(status)
	}
	if a.outcome == OutcomeUnexpected {
		a.err = describe(env)
	}
	return a
}

func classifyOther(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return OutcomeRateLimited
	case status == http.StatusServiceUnavailable:
		return OutcomeUnavailable
	case status >= 500:
		return OutcomeFailed
	}
	return OutcomeUnexpected
}

func describe(env envelope) string {
	if env.Error != nil {
		return env.Error.Code + ": " + env.Error.Message
	}
	return string(env.Data)
}

// callError turns a transport error into an answer: a call the client
// abandoned is a timeout, anything else a failure; both leave the outcome
// unknown.
func callError(ctx context.Context, err error) answer {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return answer{outcome: OutcomeTimeout, err: err.Error()}
	}
	return answer{outcome: OutcomeFailed, err: err.Error()}
}

// restPost sends POST /api/v1/entries.
func restPost(ctx context.Context, hc *http.Client, base string, req restarea.PostRequest) answer {
	body, _ := json.Marshal(req)
	status, env, err := restDo(ctx, hc, http.MethodPost, base+"/api/v1/entries", "", body)
	if err != nil {
		return callError(ctx, err)
	}
	return classifyPost(status, env)
}

// restRead reads one question or reply by entry id.
func restRead(ctx context.Context, hc *http.Client, base, typ, id string, strong bool) answer {
	path := "/api/v1/threads/"
	if typ == restarea.TypeReply {
		path = "/api/v1/replies/"
	}
	u := base + path + url.PathEscape(id)
	if strong {
		u += "?consistency=strong"
	}
	status, env, err := restDo(ctx, hc, http.MethodGet, u, "", nil)
	if err != nil {
		return callError(ctx, err)
	}
	return classifyRead(status, env)
}

// restDo makes one REST call and decodes the envelope; a body that is not
// the envelope leaves it empty (the status still counts).
func restDo(ctx context.Context, hc *http.Client, method, u, token string, body []byte) (int, envelope, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, envelope{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, envelope{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, envelope{}, err
	}
	var env envelope
	json.Unmarshal(data, &env)
	if env.RetryAfterSeconds == 0 {
		env.RetryAfterSeconds, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
	}
	return resp.StatusCode, env, nil
}

// getData makes an authorised or public GET and decodes data into out;
// any status but 200 is an error.
func getData(ctx context.Context, hc *http.Client, u, token string, out any) error {
	status, env, err := restDo(ctx, hc, http.MethodGet, u, token, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, status, describe(env))
	}
	return json.Unmarshal(env.Data, out)
}

// putSettings applies patch through PUT /api/v1/admin/settings.
func putSettings(ctx context.Context, hc *http.Client, base, token string, patch restarea.SettingsPatch) error {
	body, _ := json.Marshal(patch)
	status, env, err := restDo(ctx, hc, http.MethodPut, base+"/api/v1/admin/settings", token, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("PUT settings: %d %s", status, describe(env))
	}
	return nil
}
