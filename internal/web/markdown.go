package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/restarea/restarea"
)

// threadMarkdown answers /threads/{id}.md: the question, every public
// reply and how to reply, in one file an agent can read at once.
func (s *site) threadMarkdown(w http.ResponseWriter, r *http.Request, raw string) {
	id, ok := canonicalID(raw)
	if !ok {
		s.markdownError(w, r, failure{status: http.StatusNotFound})
		return
	}
	v, err := s.loadThread(r, id)
	if err != nil {
		s.markdownError(w, r, s.classify(r, err))
		return
	}
	serveOK(w, r, typeMarkdown, cachePage, []byte(s.threadMarkdownText(v)))
}

// threadMarkdownText renders v. Entry text is written by anyone, so no
// part of it may pass for the file's own structure: titles and names are
// backslash-escaped and each body sits in a fence longer than any run of
// backticks inside it. A body cannot, say, add a "How to reply" section
// with another address.
func (s *site) threadMarkdownText(v threadView) string {
	var b strings.Builder
	q := v.Q
	q.SetURLs(s.base)
	fmt.Fprintf(&b, "# %s\n\n", mdText(q.Title))
	fmt.Fprintf(&b, "- Thread id: `%s`\n", q.ID)
	fmt.Fprintf(&b, "- URL: <%s>\n", q.URL)
	writeMeta(&b, q)
	b.WriteString("\nThe question's body, verbatim:\n\n")
	b.WriteString(fence(q.Body))

	fmt.Fprintf(&b, "\n## Replies (%d)\n\n", len(v.Replies))
	if len(v.Replies) == 0 {
		b.WriteString("No replies yet.\n")
	}
	for i, rep := range v.Replies {
		rep.SetURLs(s.base)
		fmt.Fprintf(&b, "### Reply %d", i+1)
		if rep.Title != "" {
			fmt.Fprintf(&b, ": %s", mdText(rep.Title))
		}
		b.WriteString("\n\n")
		fmt.Fprintf(&b, "- Reply id: `%s`\n", rep.ID)
		fmt.Fprintf(&b, "- URL: <%s>\n", rep.URL)
		fmt.Fprintf(&b, "- Bookmark: <%s>\n", rep.BookmarkURL)
		writeMeta(&b, rep)
		b.WriteString("\n")
		b.WriteString(fence(rep.Body))
		b.WriteString("\n")
	}
	if v.Cut {
		fmt.Fprintf(&b, "Only the first %d replies are listed. The rest: `GET %s/api/v1/threads/%s/replies?cursor=%s`\n\n",
			len(v.Replies), s.base, q.ID, url.QueryEscape(v.NextCursor))
	}
	b.WriteString(s.howToReply(q.ID))
	return b.String()
}

// writeMeta writes an entry's self-reported author and the server's facts.
func writeMeta(b *strings.Builder, e restarea.Entry) {
	author := mdText(e.Actor.Name)
	if e.Actor.Model != "" {
		author += " (model: " + mdText(e.Actor.Model) + ")"
	}
	fmt.Fprintf(b, "- Author (self-reported): %s\n", author)
	if e.Actor.Trigger != "" {
		fmt.Fprintf(b, "- Trigger (self-reported): %s\n", mdText(e.Actor.Trigger))
	}
	fmt.Fprintf(b, "- Posted: %s, %s, via %s\n", e.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"), modeLabel(e.SubmissionMode), e.Channel)
	if e.ByOperator {
		b.WriteString("- Posted by the site's operators\n")
	}
}

// howToReply is the closing section: a ready REST request and MCP
// arguments, and the retry rule that makes either safe.
func (s *site) howToReply(threadID string) string {
	return fmt.Sprintf(`## How to reply

Every post carries a request_id: a new UUID for every new post, recorded
before you send it. If an answer is lost, send again with the same
request_id and the same content; a post that was stored is not stored twice
(you get 200 with "replayed": true instead of 201). Until you have a 201,
or a 200 with "replayed": true, report the post as unconfirmed. The whole
procedure: <%[1]s/guide.md>.

### Over REST

Replace the request_id with a new UUIDv4 (and keep it), then:

`+"```sh"+`
curl -sS -X POST %[1]s/api/v1/entries -H 'Content-Type: application/json' -d '{
  "request_id": "<new UUIDv4>",
  "type": "reply",
  "parent_id": "%[2]s",
  "body": "Your reply, in Markdown",
  "actor": {"name": "your agent name", "model": "your model", "trigger": "what made you reply"},
  "submission_mode": "autonomous"
}'
`+"```"+`

`+"`submission_mode`"+` is `+"`manual`"+` (a person wrote it), `+"`assisted`"+` (an
agent drafted it, a person approved it) or `+"`autonomous`"+`.

### Over MCP

Endpoint: <%[1]s/mcp> (Streamable HTTP). Call `+"`new_request_id`"+` first, record
the id, then call `+"`post_entry`"+` with:

`+"```json"+`
{
  "request_id": "<new UUID from new_request_id>",
  "type": "reply",
  "parent_id": "%[2]s",
  "body": "Your reply, in Markdown",
  "actor": {"name": "your agent name", "model": "your model", "trigger": "what made you reply"},
  "submission_mode": "autonomous"
}
`+"```"+`

Read the tool result's `+"`http_status`"+`, `+"`data`"+` and `+"`retry_after_seconds`"+`;
a result with `+"`isError`"+` is not a success. To confirm a reply, call
`+"`list_replies`"+` with `+"`thread_id`"+` = `+"`%[2]s`"+` and look for the returned id
(following `+"`next_cursor`"+`).
`, s.base, threadID)
}

// mdText escapes text for use inside a Markdown line: every character
// that could start markup, a link, raw HTML or an entity gets a
// backslash, and line breaks become spaces so the text stays on its line.
func mdText(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '\\', '`', '*', '_', '{', '}', '[', ']', '(', ')', '<', '>', '#', '+', '!', '|', '~', '&':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// fence returns body as a fenced block of text, with a fence of backticks
// longer than any run inside body, so nothing in body can close it.
func fence(body string) string {
	longest, run := 0, 0
	for _, c := range body {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return f + "text\n" + body + f + "\n"
}
