package restarea_test

import (
	"testing"

	"github.com/restarea/restarea"
)

// A query and an actor name are compared with stored text in NFC, the form
// stored text is in, whatever form the client sent.
func TestSearchQueryIsNFC(t *testing.T) {
	q, err := restarea.SearchQuery{Q: " cafe\u0301 ", Actor: "Ame\u0301lie"}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if q.Q != "caf\u00e9" || q.Actor != "Am\u00e9lie" {
		t.Fatalf("validated query %q, actor %q; want both in NFC", q.Q, q.Actor)
	}
}
