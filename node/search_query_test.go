package node_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// TestSearchQueryLanguageOverHTTP: the query language end to end, over
// real HTTP against a real node: words ANDed, a phrase in order, a
// prefix, an exclusion, a hyphenated word taken literally, and the
// refusals (400 invalid_request naming q) of the REST handler.
func TestSearchQueryLanguageOverHTTP(t *testing.T) {
	n := testnode.Start(t)
	base := n.URL()
	order := restPost(t, base, searchQuestion("Raft", "The leader election in raft takes a while.", "ql")).ID
	noRaft := restPost(t, base, searchQuestion("Leader only", "The leader is elected by the followers.", "ql")).ID
	reverse := restPost(t, base, searchQuestion("Elections", "An election of the leader in raft is rare.", "ql")).ID
	hyphen := restPost(t, base, searchQuestion("Storage", "I use raft-boltdb for the log store.", "ql")).ID
	apart := restPost(t, base, searchQuestion("Storage too", "Raft and boltdb are apart here: boltdb stores, raft replicates.", "ql")).ID
	// A query waits a second for the index to reach the applied state,
	// which a busy machine may exceed.
	testkit.Eventually(t, 20*time.Second, "the index to hold the entries", func() error {
		if _, a := restSearch(t, base, url.Values{"q": {"raft"}}); len(a.Data.Results) != 4 {
			return fmt.Errorf("%d results for raft", len(a.Data.Results))
		}
		return nil
	})

	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"leader raft", []string{order, reverse}},
		{`"leader election"`, []string{order}},
		{"elect* raft", []string{order, reverse}},
		{"leader -raft", []string{noRaft}},
		{"raft-boltdb", []string{hyphen}},
		{"boltdb -raft-boltdb", []string{apart}},
	} {
		status, a := restSearch(t, base, url.Values{"q": {tt.q}})
		var got []string
		for _, r := range a.Data.Results {
			got = append(got, r.ID)
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if status != http.StatusOK || !slices.Equal(got, want) {
			t.Errorf("%s: %d %v, want %v", tt.q, status, got, want)
		}
	}

	for _, q := range []string{"le*", "-raft", `-"leader election" -boltdb`, "-the"} {
		status, a := restSearch(t, base, url.Values{"q": {q}})
		if status != http.StatusBadRequest || a.Error == nil || a.Error.Code != "invalid_request" || !strings.HasPrefix(a.Error.Message, "q ") {
			t.Errorf("%s: %d %+v, want 400 invalid_request naming q", q, status, a.Error)
		}
	}
}
