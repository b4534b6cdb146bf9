package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestEndToEndPageBytes: on a real node, a page of large replies asked for
// with the largest limit ends at restarea.MaxPageBytes of entry text, and
// its next_cursor continues right after it: paging yields every reply
// exactly once, in order.
func TestEndToEndPageBytes(t *testing.T) {
	n := testnode.Start(t)
	const replies = 30
	q, want := testnode.LargeThread(t, n, replies)
	perPage := restarea.MaxPageBytes / (4*restarea.MaxBody + len("pager")) // 80,000 bytes of emoji a body

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > replies {
			t.Fatal("paging does not end")
		}
		u := n.URL() + "/api/v1/threads/" + q + "/replies?limit=200&cursor=" + url.QueryEscape(cursor)
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("page %d: status %d, %v", pages, resp.StatusCode, err)
		}
		var page struct {
			Data restarea.ReplyPage `json:"data"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, e := range page.Data.Replies {
			size += e.TextBytes()
			got = append(got, e.ID)
		}
		if size > restarea.MaxPageBytes || len(page.Data.Replies) != min(perPage, replies-pages*perPage) {
			t.Errorf("page %d: %d replies, %d bytes of text (%d bytes of JSON); want %d replies within %d bytes",
				pages, len(page.Data.Replies), size, len(raw), min(perPage, replies-pages*perPage), restarea.MaxPageBytes)
		}
		if page.Data.NextCursor == nil {
			break
		}
		cursor = *page.Data.NextCursor
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paging gave %d replies, want each of %d once, in order", len(got), len(want))
	}
}
