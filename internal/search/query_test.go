package search

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/restarea/restarea"
)

// queryBoard is a board of entries chosen to tell the query language's
// readings apart; names map a short key to each entry's id.
func queryBoard(t *testing.T) (*board, map[string]string) {
	t.Helper()
	b := newBoard(t)
	ids := map[string]string{}
	for _, e := range []struct{ key, title, body string }{
		{"order", "Raft", "The leader election in raft takes a while."},
		{"noraft", "Leader only", "The leader is elected by the followers."},
		{"reverse", "Elections", "An election of the leader in raft is rare."},
		{"hyphen", "Storage", "I use raft-boltdb for the log store."},
		{"apart", "Storage too", "Raft and boltdb are separate here: boltdb stores, raft replicates."},
		{"quote", "Greeting", `He said "hello world" twice.`},
		{"stem", "Duplicates", "I posted twice after a timeout; retrying helped."},
		{"snap", "Snapshots", "Snapshot restore failed on the follower."},
		{"cache", "Pages", "Caching pages, then the cache is warm."},
		{"ja", "接続", "接続が切れたので再試行しました。"},
	} {
		ids[e.key] = b.question(e.title, e.body, "a")
	}
	b.waitIndexed()
	return b, ids
}

// found runs q and returns the keys of the entries it found, sorted.
func found(t *testing.T, b *board, keys map[string]string, q string) []string {
	t.Helper()
	var out []string
	for _, id := range ids(b.search(restarea.SearchQuery{Q: q, Limit: 50})) {
		for k, v := range keys {
			if v == id {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// The query language on a real index: words ANDed, phrases in order,
// prefixes against the stemmed terms, exclusions, and the characters of
// the grammar taken literally where they are not operators.
func TestQueryLanguage(t *testing.T) {
	b, keys := queryBoard(t)
	for _, tt := range []struct {
		q    string
		want []string
	}{
		// Every word, in the title or the body.
		{"leader raft", []string{"order", "reverse"}},
		{"leader", []string{"noraft", "order", "reverse"}},
		{"raft snapshot", nil},
		{"storage boltdb", []string{"apart", "hyphen"}}, // title and body
		// A phrase: adjacent and in order; stop words keep their gap.
		{`"leader election"`, []string{"order"}},
		{`"election leader"`, nil},
		{`"election of the leader"`, []string{"reverse"}},
		{`"leader election" raft`, []string{"order"}},
		// A stemmed word in a phrase: the phrase matches the stems.
		{`"posting twice"`, []string{"stem"}},
		{`"posted twice after a timeout"`, []string{"stem"}},
		// Prefixes match the stored (stemmed) terms, in the written and
		// the stemmed form of the prefix.
		{"elect*", []string{"noraft", "order", "reverse"}},
		{"retr*", []string{"stem"}},
		{"retry*", []string{"stem"}}, // retrying is stored as retri
		{"Snap*", []string{"snap"}},
		{"cache*", []string{"cache"}}, // caching and cache are stored as cach
		{"postin*", nil},              // posted is stored as post: a prefix past the stem misses
		{"post*", []string{"stem"}},
		{"zzz*", nil},
		{"raft-bolt*", []string{"hyphen"}}, // a phrase whose last word is a prefix
		// Exclusions, of words and phrases.
		{"leader -raft", []string{"noraft"}},
		{`raft -"leader election"`, []string{"apart", "hyphen", "reverse"}},
		{"leader -zzz", []string{"noraft", "order", "reverse"}},
		{"leader -elect*", nil},
		// Literal text: a hyphen inside a word splits it as stored text
		// is split, the parts adjacent.
		{"raft-boltdb", []string{"hyphen"}},
		{"boltdb-raft", nil},
		{`said "hello`, []string{"quote"}},            // an unbalanced quote is literal
		{`"hello world"`, []string{"quote"}},          // balanced: a phrase
		{`hello" world`, []string{"quote"}},           // a quote inside a word
		{"* timeout", []string{"stem"}},               // * alone
		{"time*out", nil},                             // * inside a word: time, out adjacent
		{"- timeout", []string{"stem"}},               // - alone
		{"--timeout", []string{"stem"}},               // not an exclusion
		{"the of", nil},                               // stop words only: nothing to find
		{"ＲＡＦＴ ｌｅａｄｅｒ", []string{"order", "reverse"}}, // folded as stored text
		// CJK: a run of text is its pairs of characters, adjacent; a *
		// after it changes nothing (pairs are found inside words).
		{"再試行", []string{"ja"}},
		{"再試行 接続", []string{"ja"}},
		{"行再試", nil},
		{"再試*", []string{"ja"}},
		{"接続 -再試行", nil},
	} {
		if got := found(t, b, keys, tt.q); !slices.Equal(got, tt.want) {
			t.Errorf("%s: found %v, want %v", tt.q, got, tt.want)
		}
	}

	// A prefix is not a stop word: "the*" finds "theory".
	th := b.question("Theory", "A theory of consensus.", "a")
	b.waitIndexed()
	if got := ids(b.search(restarea.SearchQuery{Q: "the* consensus"})); !slices.Equal(got, []string{th}) {
		t.Errorf("the* consensus: %v, want [%s]", got, th)
	}

	// Snippets mark what a prefix expanded to.
	if p := b.search(restarea.SearchQuery{Q: "retr*"}); len(p.Results) != 1 || !strings.Contains(p.Results[0].Snippet, "«retrying»") {
		t.Errorf("retr* snippet: %+v", p.Results)
	}
}

// Ranking is as before: a body holding the query's words as written
// ranks first (find_my_post), though every entry holding them all is found.
func TestQueryRanking(t *testing.T) {
	b := newBoard(t)
	body := b.question("Other", "raft leader notes: the leader steps down", "a")
	exact := b.question("Other", "the leader steps down in raft", "a")
	b.waitIndexed()
	if got := ids(b.search(restarea.SearchQuery{Q: "the leader steps down in raft"})); len(got) != 2 || got[0] != exact || got[1] != body {
		t.Errorf("exact body: %v, want [%s %s]", got, exact, body)
	}
}

// Queries the grammar refuses, naming q: a prefix too short, a query of
// exclusions only, a prefix that expands past the term budget.
func TestQueryRefusals(t *testing.T) {
	b := newBoard(t)
	var w []string
	for i := range restarea.MaxSearchTerms + 1 {
		w = append(w, fmt.Sprintf("zqv%02dx", i))
	}
	b.question("Many", strings.Join(w, " "), "a")
	b.waitIndexed()
	for _, q := range []string{
		"ti*", "raft-ab*", "-ti* raft", "-raft", `-"leader election"`, "-raft -leader", "-the", "-raft the",
		"zqv*", "zqv0* zqv1* zqv2* zqv3*", words(restarea.MaxSearchTerms-1) + " zqv00*" + " zqv01*",
	} {
		_, err := b.x.Search(context.Background(), restarea.SearchQuery{Q: q})
		if restarea.ErrorCode(err) != restarea.CodeInvalidRequest || !strings.HasPrefix(restarea.ErrorMessage(err), "q ") {
			t.Errorf("%q: %v, want invalid_request naming q", q, err)
		}
	}
	// A prefix within the budget is admitted: its expansion is counted.
	if got := ids(b.search(restarea.SearchQuery{Q: "zqv0* zqv1* zqv2*"})); len(got) != 1 {
		t.Errorf("zqv0* zqv1* zqv2*: %v", got)
	}
}
