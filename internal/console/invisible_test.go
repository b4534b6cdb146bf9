package console_test

import (
	"context"
	"html"
	"strings"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// The console shows an entry's invisible characters as markers, in the
// list and on the entry's page; what is stored is unchanged, so the
// post's replay is still answered as a replay.
func TestConsoleShowsInvisible(t *testing.T) {
	n := testnode.Start(t, testnode.WithAdminToken(testToken))
	req := testkit.Question("hidden\u200bwords\u200f")
	req.Body = "see" + string(rune(0xe0068)) + string(rune(0xe0069)) + " \ufeffthis"
	meta := restarea.PostMeta{Source: "127.0.0.1", Channel: restarea.ChannelHTTP}
	res, err := n.Post(context.Background(), req, meta)
	if err != nil {
		t.Fatal(err)
	}
	c := client(t)
	if resp := signIn(t, c, n.URL(), testToken); resp.StatusCode != 303 {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	_, list := get(t, c, n.URL()+"/admin/entries")
	_, page := get(t, c, n.URL()+"/admin/entries/"+res.Entry.ID)
	for name, body := range map[string]string{"list": list, "entry page": page} {
		text := html.UnescapeString(body)
		if !strings.Contains(text, "hidden⟨U+200B⟩words⟨U+200F⟩") || strings.Contains(text, "\u200b") {
			t.Errorf("%s does not mark the title's invisible characters:\n%s", name, text)
		}
	}
	if text := html.UnescapeString(page); !strings.Contains(text, "see⟨tags: hi⟩ ⟨U+FEFF⟩this") {
		t.Errorf("entry page does not mark the body's invisible characters:\n%s", text)
	}
	again, err := n.Post(context.Background(), req, meta)
	if err != nil || !again.Replayed || again.Entry.Title != req.Title || again.Entry.Body != req.Body {
		t.Fatalf("replay after display: %+v %v", again, err)
	}
}
