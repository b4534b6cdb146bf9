package web_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestThreadPartsOnRunningNode: on a real node, whose reply pages end at
// restarea.MaxPageBytes, the .md of a thread of 30 replies of 80,000 bytes
// is in two parts, the first saying where the second is, and the two
// list every reply once, numbered on.
func TestThreadPartsOnRunningNode(t *testing.T) {
	n := testnode.Start(t)
	const replies = 30
	q, want := testnode.LargeThread(t, n, replies)
	next := regexp.MustCompile(`\n- More replies follow this part: <([^>]+)>`)
	ids := regexp.MustCompile("\n- Reply id: `([0-9a-f-]+)`")
	var got []string
	var sizes []int
	for u := n.URL() + "/threads/" + q + ".md"; u != ""; {
		if len(sizes) > replies {
			t.Fatal("the parts do not end")
		}
		resp, body := getPage(t, u)
		if resp.Status != 200 {
			t.Fatalf("%s: status %d", u, resp.Status)
		}
		part := ids.FindAllStringSubmatch(body, -1)
		sizes = append(sizes, len(part))
		for _, m := range part {
			got = append(got, m[1])
		}
		u = ""
		if m := next.FindStringSubmatch(body); m != nil {
			u = m[1]
		}
	}
	if len(sizes) != 2 || sizes[0] != 26 {
		t.Errorf("parts of %v replies, want [26 4] (2 MiB of text a part)", sizes)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the parts list %d replies, want each of %d once, in order", len(got), len(want))
	}
}
