package web_test

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestThreadFeedOnRunningNode: on a real node, which lists a thread's
// replies newest first from its state, the feed of a thread with more
// replies than a feed holds lists the newest 50, newest first, and the
// ones after them, older, are left out.
func TestThreadFeedOnRunningNode(t *testing.T) {
	n := testnode.Start(t)
	q := testnode.Post(t, n, testkit.Question("a busy thread")).Entry.ID
	// Another thread's replies around them in the replies index.
	other := testnode.Post(t, n, testkit.Question("another thread")).Entry.ID
	const total = 60
	var replies []string
	for i := range total {
		replies = append(replies, testnode.Post(t, n, testkit.Reply(q, fmt.Sprint("reply ", i))).Entry.ID)
		testnode.Post(t, n, testkit.Reply(other, "elsewhere"))
	}
	resp, body := getPage(t, n.URL()+"/threads/"+q+"/feed.atom")
	if resp.Status != 200 {
		t.Fatalf("feed: status %d", resp.Status)
	}
	var feed struct {
		Entries []struct {
			ID string `xml:"id"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal([]byte(body), &feed); err != nil {
		t.Fatalf("feed is not XML: %v", err)
	}
	var got []string
	for _, e := range feed.Entries {
		got = append(got, strings.TrimPrefix(e.ID, "urn:uuid:"))
	}
	var want []string
	for i := total - 1; i >= total-50; i-- {
		want = append(want, replies[i])
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the feed lists %d replies %v,\nwant the newest 50, newest first: %v", len(got), got, want)
	}
}
