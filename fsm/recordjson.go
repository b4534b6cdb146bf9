package fsm

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/jsonstr"
)

// parseRecordJSON decodes a record written by appendRecordJSON without
// reflection: every read of an entry decodes one (the indexer every new
// post on every node, a replay its original on every node, a page of
// replies each of them), and encoding/json spent most of that time
// finding its way through the struct. It accepts only that exact shape —
// the keys in that order, optional ones where appendRecordJSON omits
// them, nothing between tokens — and reports false for anything else,
// which decodeRecord then hands to encoding/json: so whatever it accepts,
// it decodes to what json.Unmarshal gives (FuzzParseRecordJSON compares
// the two on arbitrary input).
func parseRecordJSON(v []byte) (*record, bool) {
	p := recordParser{b: v}
	r := &record{}
	p.lit(`{"id":`)
	r.ID = p.str()
	if p.opt(`,"request_id":`) {
		r.RequestID = p.str()
	}
	p.lit(`,"type":`)
	r.Type = p.str()
	if p.opt(`,"parent_id":`) {
		r.ParentID = p.str()
	}
	if p.opt(`,"title":`) {
		r.Title = p.str()
	}
	p.lit(`,"body":`)
	r.Body = p.str()
	p.lit(`,"actor":{"name":`)
	r.Actor.Name = p.str()
	if p.opt(`,"model":`) {
		r.Actor.Model = p.str()
	}
	if p.opt(`,"trigger":`) {
		r.Actor.Trigger = p.str()
	}
	p.lit(`},"submission_mode":`)
	r.SubmissionMode = p.str()
	p.lit(`,"channel":`)
	r.Channel = restarea.Channel(p.str())
	p.lit(`,"created_at":`)
	r.CreatedAt = p.time()
	p.lit(`,"visible":`)
	r.Visible = p.bool()
	p.lit(`,"by_operator":`)
	r.ByOperator = p.bool()
	if p.opt(`,"url":`) {
		r.URL = p.str()
	}
	if p.opt(`,"bookmark_url":`) {
		r.BookmarkURL = p.str()
	}
	p.lit(`,"attempt_id":`)
	r.AttemptID = p.str()
	p.lit(`,"seq":`)
	r.Seq = p.uint()
	p.lit(`}`)
	if p.bad || len(p.b) != 0 {
		return nil, false
	}
	return r, true
}

// recordParser consumes b from the front; after the first mismatch bad is
// set and every further step is a no-op.
type recordParser struct {
	b   []byte
	bad bool
}

func (p *recordParser) lit(s string) {
	if !p.opt(s) {
		p.bad = true
	}
}

// opt consumes s if b starts with it.
func (p *recordParser) opt(s string) bool {
	if p.bad || len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// str consumes a JSON string and decodes it as encoding/json does
// (jsonstr.Unquote).
func (p *recordParser) str() string {
	if p.bad || len(p.b) == 0 || p.b[0] != '"' {
		p.bad = true
		return ""
	}
	b := p.b[1:]
	// Most strings hold no escape: the first quote ends them.
	if end := bytes.IndexByte(b, '"'); end >= 0 && bytes.IndexByte(b[:end], '\\') < 0 && plain(b[:end]) {
		p.b = b[end+1:]
		return string(b[:end])
	}
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped character never ends the string
		case '"':
			out, ok := jsonstr.Unquote(b[:i])
			p.b = b[i+1:]
			if !ok {
				p.bad = true
			}
			return string(out)
		}
	}
	p.bad = true
	return ""
}

// plain reports whether s stands in a JSON string for itself: valid
// UTF-8 without control characters (the common case, copied as is).
func plain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 {
			return false
		}
	}
	return utf8.Valid(s)
}

// time consumes a quoted RFC 3339 time as time.Time.UnmarshalJSON reads
// it (the same function encoding/json calls).
func (p *recordParser) time() time.Time {
	var t time.Time
	if p.bad || len(p.b) == 0 || p.b[0] != '"' {
		p.bad = true
		return t
	}
	end := bytes.IndexByte(p.b[1:], '"')
	if end < 0 {
		p.bad = true
		return t
	}
	if err := t.UnmarshalJSON(p.b[:end+2]); err != nil {
		p.bad = true
		return t
	}
	p.b = p.b[end+2:]
	return t
}

func (p *recordParser) bool() bool {
	switch {
	case p.opt("true"):
		return true
	case p.opt("false"):
		return false
	}
	p.bad = true
	return false
}

// uint consumes an unsigned decimal integer as encoding/json reads one
// into a uint64: no sign, no leading zero, no fraction or exponent.
func (p *recordParser) uint() uint64 {
	if p.bad {
		return 0
	}
	n := 0
	for n < len(p.b) && '0' <= p.b[n] && p.b[n] <= '9' {
		n++
	}
	if n == 0 || n > 1 && p.b[0] == '0' {
		p.bad = true
		return 0
	}
	v, err := strconv.ParseUint(string(p.b[:n]), 10, 64)
	if err != nil {
		p.bad = true
		return 0
	}
	p.b = p.b[n:]
	return v
}
