package web

import (
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
)

// Entries stored before controls were refused, or titles with bidi
// overrides (still allowed in titles), must not reach a reader raw: no
// ESC for a terminal printing the Markdown, no override reordering a
// title or a name on any page.
func TestDisplayNeutralisesControls(t *testing.T) {
	f := testkit.NewFakeService()
	q := fakeID(3, 1)
	r := fakeID(3, 2)
	f.Add(restarea.Entry{
		ID: q, Type: restarea.TypeQuestion, Title: "evil\u202etxt.exe", Body: "body \x1b[2J with \u2067rtl\u2069",
		Actor:          restarea.Actor{Name: "gpt\u202e4", Model: "m\u2066x\u2069", Trigger: "t\x00"},
		SubmissionMode: restarea.ModeAutonomous, Channel: restarea.ChannelMCP, CreatedAt: fakeEpoch, Visible: true,
	})
	addReply(f, q, r, "re\u202d: \x1b]0;x\x07", "reply \x7f body")
	srv := serve(t, f)

	bad := []string{"\u202e", "\u202d", "\u2066", "\x1b", "\x00", "\x07", "\x7f"}
	for _, path := range []string{"/", "/threads/" + q, "/threads/" + q + ".md", "/replies/" + r} {
		a := get(t, srv, path)
		if a.status != 200 {
			t.Fatalf("%s: status %d", path, a.status)
		}
		for _, b := range bad {
			if strings.Contains(a.body, b) {
				t.Errorf("%s: %+q shown raw", path, b)
			}
		}
		if !strings.Contains(a.body, "gpt4") && path != "/" && path != "/replies/"+r {
			t.Errorf("%s: actor name not shown as gpt4", path)
		}
		if path == "/" {
			continue
		}
		if !strings.Contains(a.body, "\u2067rtl\u2069") && path != "/replies/"+r {
			t.Errorf("%s: the body's own bidi isolates were removed", path)
		}
		if !strings.Contains(a.body, "body \ufffd[2J") && path != "/replies/"+r {
			t.Errorf("%s: the body's ESC is not shown as U+FFFD", path)
		}
	}
}
