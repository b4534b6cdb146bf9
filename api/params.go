package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/restarea/restarea"
)

// pathID returns the {id} path segment, checked to be a UUID and
// lowercased, so the service sees one spelling of every id.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !restarea.ValidUUID(id) {
		return "", restarea.Errorf(restarea.CodeInvalidRequest, "id must be a UUID in canonical form (8-4-4-4-12 hex digits)")
	}
	return strings.ToLower(id), nil
}

// query parses the query string. A malformed one is refused rather than
// half-read (url.Values silently drops the pairs it cannot decode);
// unknown parameters are ignored.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, restarea.Errorf(restarea.CodeInvalidRequest, "malformed query string: %v", err)
	}
	return q, nil
}

// readOptions reads ?consistency= of a single-entry read.
func readOptions(r *http.Request) (restarea.ReadOptions, error) {
	q, err := query(r)
	if err != nil {
		return restarea.ReadOptions{}, err
	}
	c, err := restarea.ParseConsistency(q.Get("consistency"))
	return restarea.ReadOptions{Consistency: c}, err
}

// listOptions reads ?cursor=&limit=&consistency= of a paged read. The
// cursor is opaque here; the service judges it.
func listOptions(r *http.Request) (restarea.ListOptions, error) {
	q, err := query(r)
	if err != nil {
		return restarea.ListOptions{}, err
	}
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		return restarea.ListOptions{}, err
	}
	c, err := restarea.ParseConsistency(q.Get("consistency"))
	if err != nil {
		return restarea.ListOptions{}, err
	}
	return restarea.ListOptions{Cursor: q.Get("cursor"), Limit: limit, Consistency: c}, nil
}

// parseLimit returns 0 (the service default) for an absent or empty limit,
// else an integer in [1, MaxPageLimit].
func parseLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > restarea.MaxPageLimit {
		return 0, restarea.Errorf(restarea.CodeInvalidRequest, "limit must be an integer between 1 and %d", restarea.MaxPageLimit)
	}
	return n, nil
}
