package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/restarea/restarea"
)

// Backup streams GET /api/v1/admin/backup (a consistent copy of the state
// file, as `restarea restore` takes it) into w and returns the bytes
// written. It moves to the next server, as reads do, only while nothing
// has been written to w; once the copy started, a cut stream is an error
// and what w received must be thrown away. Options.AttemptTimeout bounds
// the wait for the answer and every silence within it; Options.Deadline
// bounds the whole backup, so give it room for a large state.
func (a *Admin) Backup(ctx context.Context, w io.Writer) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, a.c.opts.Deadline)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var last error
	for attempt := 1; attempt <= a.c.opts.MaxAttempts; attempt++ {
		base := a.c.server()
		n, retry, err := a.backupFrom(ctx, base, w)
		if err == nil {
			return n, nil
		}
		if !retry {
			return n, err
		}
		last = err
		a.c.opts.Logger.Info("backup failed before the copy started; trying the next server", "server", base, "attempt", attempt, "err", err)
		a.c.rotate(base)
		if attempt == a.c.opts.MaxAttempts || ctx.Err() != nil {
			break
		}
		if attempt%len(a.c.servers) == 0 && !pause(ctx, backoff(attempt/len(a.c.servers), a.c.opts.BaseBackoff, a.c.opts.MaxBackoff), deadline) {
			break
		}
	}
	if last == nil {
		last = fmt.Errorf("%w: %v", ErrUnreachable, ctx.Err())
	}
	return 0, fmt.Errorf("backup: %w", last)
}

// backupFrom copies one server's backup into w. retry is true when the
// failure came before anything was written and another server may answer.
func (a *Admin) backupFrom(ctx context.Context, base string, w io.Writer) (n int64, retry bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(a.c.opts.AttemptTimeout, cancel)
	defer idle.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/admin/backup", nil)
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("User-Agent", "restarea-client")
	resp, err := a.c.opts.HTTPClient.Do(req)
	if err != nil {
		return 0, true, fmt.Errorf("%s: %w: %v", base, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e := refusal(resp)
		if resp.StatusCode == http.StatusServiceUnavailable {
			return 0, true, fmt.Errorf("%s: %w", base, e)
		}
		return 0, false, e
	}
	n, err = io.Copy(w, idleReader{r: resp.Body, idle: idle, d: a.c.opts.AttemptTimeout})
	if err != nil {
		// Nothing written yet: the copy can start over elsewhere.
		return n, n == 0, fmt.Errorf("backup from %s cut after %d bytes: %w", base, n, err)
	}
	if n == 0 {
		return 0, true, fmt.Errorf("backup from %s: empty answer", base)
	}
	return n, false, nil
}

// idleReader re-arms the idle timer on every read that brings data.
type idleReader struct {
	r    io.Reader
	idle *time.Timer
	d    time.Duration
}

func (r idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.idle.Reset(r.d)
	}
	return n, err
}

// refusal reads a non-200 answer into a *restarea.Error.
func refusal(resp *http.Response) *restarea.Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	retry := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	var env struct {
		Error *struct {
			Code    restarea.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil && env.Error.Code != "" {
		return &restarea.Error{Code: env.Error.Code, Message: env.Error.Message, RetryAfter: retry}
	}
	return &restarea.Error{Code: codeOfStatus(resp.StatusCode), Message: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, snippet(raw)), RetryAfter: retry}
}
