package search

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

func TestParseQuery(t *testing.T) {
	w := func(s string) Clause { return Clause{Text: s} }
	for _, tt := range []struct {
		q    string
		want []Clause
	}{
		{"raft leader", []Clause{w("raft"), w("leader")}},
		{"  raft \t\n leader  ", []Clause{w("raft"), w("leader")}},
		{`"leader election" raft`, []Clause{{Text: "leader election", Phrase: true}, w("raft")}},
		{`" spaced  phrase "`, []Clause{{Text: "spaced  phrase", Phrase: true}}},
		{`"a b"c`, []Clause{{Text: "a b", Phrase: true}, w("c")}},
		{`post*`, []Clause{{Text: "post", Prefix: true}}},
		{`-snapshot raft`, []Clause{{Text: "snapshot", Exclude: true}, w("raft")}},
		{`-"log compaction" raft`, []Clause{{Text: "log compaction", Phrase: true, Exclude: true}, w("raft")}},
		{`-retr* raft`, []Clause{{Text: "retr", Prefix: true, Exclude: true}, w("raft")}},
		{`-1 x`, []Clause{{Text: "1", Exclude: true}, w("x")}},
		{`-é x`, []Clause{{Text: "é", Exclude: true}, w("x")}},
		// Literal text: not an operator where it stands.
		{"raft-boltdb", []Clause{w("raft-boltdb")}},
		{"- item", []Clause{w("-"), w("item")}},
		{"--force", []Clause{w("--force")}},
		{"-", []Clause{w("-")}},
		{"-*", []Clause{{Text: "-", Prefix: true}}},
		{`-"unbalanced`, []Clause{w(`-"unbalanced`)}},
		{`say "hello`, []Clause{w("say"), w(`"hello`)}},
		{`a"b c"`, []Clause{w(`a"b`), w(`c"`)}},
		{`5" screen`, []Clause{w(`5"`), w("screen")}},
		{"*", []Clause{w("*")}},
		{"a*b", []Clause{w("a*b")}},
		{"*foo", []Clause{w("*foo")}},
		{`"post*"`, []Clause{{Text: "post*", Phrase: true}}},
		{`"-x"`, []Clause{{Text: "-x", Phrase: true}}},
		{`""`, nil},
		{`-"" x`, []Clause{w("x")}},
		{`"" "`, []Clause{w(`"`)}},
		{"", nil},
		{"再試行 接続", []Clause{w("再試行"), w("接続")}},
		{"全角　空白", []Clause{w("全角"), w("空白")}}, // U+3000 is whitespace
	} {
		if got := ParseQuery(tt.q); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseQuery(%q)\n got  %+v\n want %+v", tt.q, got, tt.want)
		}
	}
}

// FuzzParseQuery: ParseQuery never panics and its output is bounded by its
// input, each clause as the Clause type promises.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{`"a b" -c d* -"e f" raft-boltdb`, `-"`, `"`, `**`, `-- - * "" -""`, "\xff\"\xfe-", "再試行*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		cs := ParseQuery(q)
		if len(cs) > len(q) {
			t.Fatalf("%d clauses from %d bytes", len(cs), len(q))
		}
		total := 0
		for _, c := range cs {
			total += len(c.Text)
			switch {
			case c.Text == "":
				t.Fatalf("empty clause in %+v", cs)
			case c.Phrase && c.Prefix:
				t.Fatalf("phrase and prefix: %+v", c)
			case !c.Phrase && strings.IndexFunc(c.Text, unicode.IsSpace) >= 0:
				t.Fatalf("word with whitespace: %+v", c)
			}
		}
		if total > len(q) {
			t.Fatalf("%d bytes of text from %d", total, len(q))
		}
		// Analysis is bounded too: Check never panics on what parses.
		for _, c := range cs {
			if m, err := analyse(c); err == nil && len(m.slots) > len(q)+1 {
				t.Fatalf("%d slots from %d bytes", len(m.slots), len(q))
			}
		}
	})
}
