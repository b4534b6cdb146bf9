package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// streamBuffer is what a streamed answer holds on its way to the
// connection. A client that never reads keeps at most this much of the
// answer (and the data it is made from) waiting, not the whole answer.
const streamBuffer = 32 << 10

// errPassesDiffer is a streamed answer whose second pass wrote other bytes
// than its first: a defect of the writer, since both passes render the
// same data.
var errPassesDiffer = errors.New("web: the streamed answer differed between its passes")

// serveStream answers 200 with what write produces, without holding the
// answer in memory. write runs twice over the same data: first into a
// hash, which gives the strong ETag and the Content-Length before any
// byte is sent (and finds a failure while a clean error can still be
// answered), then, unless the client already holds those bytes (304) or
// asked for the headers only (HEAD), into the connection through a
// streamBuffer-sized buffer. write must therefore produce the same bytes
// on both runs.
//
// serveStream returns write's error of the first run, when nothing has
// been written; the caller answers it. A failure while streaming (the
// client left, or a defect) is logged: the answer can only be cut short.
func (s *site) serveStream(w http.ResponseWriter, r *http.Request, contentType, cacheControl string, write func(io.Writer) error) error {
	hash := sha256.New()
	sum := &counter{w: hash}
	if err := write(sum); err != nil {
		return err
	}
	etag := `"` + base64.RawURLEncoding.EncodeToString(hash.Sum(nil)[:16]) + `"`
	if notModified(w, r, etag, cacheControl, time.Time{}) {
		return nil
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.FormatInt(sum.n, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	buf := bufio.NewWriterSize(w, streamBuffer)
	out := &counter{w: buf}
	err := write(out)
	if err == nil {
		err = buf.Flush()
	}
	switch {
	case out.err != nil || (err != nil && r.Context().Err() != nil):
		s.log.Debug("web: answer cut short", "path", r.URL.Path, "err", errors.Join(out.err, err))
	case err != nil:
		s.log.Error("web: streaming failed", "path", r.URL.Path, "err", err)
	case out.n != sum.n:
		s.log.Error("web: streaming failed", "path", r.URL.Path, "err", errPassesDiffer, "first", sum.n, "second", out.n)
	}
	return nil
}

// counter counts what passes through it and keeps the first write error
// (the connection's, as opposed to the writer's own).
type counter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *counter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
