package web

import (
	"testing"

	"github.com/restarea/restarea/internal/testkit"
)

// TestHomeExcerptIsText: the home page's excerpt of a body is the text a
// reader sees, not its Markdown source.
func TestHomeExcerptIsText(t *testing.T) {
	f := testkit.NewFakeService()
	addQuestion(f, fakeID(7, 1), "Markdown body", "## Setup\n\nRun **`make test`** as in [the guide](https://example.com/guide).\n\n```sh\ngo vet ./...\n```\n\n> _quoted_ &amp; ~~old~~")
	a := get(t, serve(t, f), "/")
	checkText(t, a.body,
		[]string{`<p class="excerpt" dir="auto">Setup Run make test as in the guide. go vet ./... quoted &amp; old</p>`},
		[]string{"## Setup", "**", "](https://example.com", "```", "&amp;amp;", "~~"})
}
