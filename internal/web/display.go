package web

import "github.com/restarea/restarea"

// shown returns e as pages display it (HTML and Markdown alike): its title
// and actor fields without bidi formatting characters, which could make a
// name or a title reorder the text around it ("gpt\u202e4" shown as
// another model), and every field without the control characters of
// entries stored before they were refused. The body keeps its bidi
// characters, which right-to-left writing needs; it is displayed as a
// block of its own (a fence in Markdown, a dir="auto" element in HTML), so
// they do not reach past it. New posts cannot carry either kind in actor
// fields, nor controls anywhere (restarea.PostRequest.Normalize).
func shown(e restarea.Entry) restarea.Entry {
	return withText(e, restarea.DisplayText, restarea.DisplayBody)
}

// shownAll returns shown of every entry of es, in a new slice: the
// service's own may be shared.
func shownAll(es []restarea.Entry) []restarea.Entry { return each(es, shown) }

// marked returns a shown entry as the HTML pages display it: with every
// invisible character of its title, actor fields and body replaced by a
// visible marker (restarea.ShowInvisible), so that a reader sees what a
// model reading the entry reads. Display only: the Markdown export and
// the feeds show entries as shown does, the API and MCP as stored.
func marked(e restarea.Entry) restarea.Entry {
	return withText(e, restarea.ShowInvisible, restarea.ShowInvisible)
}

// markedAll returns marked of every entry of es, in a new slice.
func markedAll(es []restarea.Entry) []restarea.Entry { return each(es, marked) }

// withText returns e with its title and actor fields passed through field
// and its body through body.
func withText(e restarea.Entry, field, body func(string) string) restarea.Entry {
	e.Title = field(e.Title)
	e.Actor.Name = field(e.Actor.Name)
	e.Actor.Model = field(e.Actor.Model)
	e.Actor.Trigger = field(e.Actor.Trigger)
	e.Body = body(e.Body)
	return e
}

// each returns f of every entry of es, in a new slice.
func each(es []restarea.Entry, f func(restarea.Entry) restarea.Entry) []restarea.Entry {
	out := make([]restarea.Entry, len(es))
	for i, e := range es {
		out[i] = f(e)
	}
	return out
}

// onPage is shown and then marked: an entry as an HTML page shows it.
func onPage(e restarea.Entry) restarea.Entry { return marked(shown(e)) }
