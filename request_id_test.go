package restarea_test

import (
	"testing"

	"github.com/restarea/restarea"
)

// What "refused" means for a request_id (docs/api.md): the forms, versions
// and variants that are not drawn at random; an id with the right digits,
// however it was made, cannot be told from a random one.
func TestRequestIDForms(t *testing.T) {
	for id, want := range map[string]bool{
		"6f1c1f3e-1111-4a4a-8b8b-123456789abc":          true,  // random v4
		"01a23d5d-dfad-7b9a-8724-3f6071b00367":          true,  // v7
		"11111111-1111-4111-8111-111111111111":          true,  // by hand, right bits: indistinguishable
		"6F1C1F3E-1111-4A4A-BB8B-123456789ABC":          true,  // any letter case
		"00000000-0000-0000-0000-000000000000":          false, // nil
		"11111111-1111-1111-1111-111111111111":          false, // version 1
		"11111111-1111-5111-8111-111111111111":          false, // version 5 (name-based)
		"11111111-1111-4111-c111-111111111111":          false, // wrong variant
		"11111111-1111-4111-7111-111111111111":          false, // NCS variant
		"111111111111411181111111111111111111":          false, // no hyphens
		"{11111111-1111-4111-8111-111111111111}":        false,
		"urn:uuid:11111111-1111-4111-8111-111111111111": false,
	} {
		if got := restarea.ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", id, got, want)
		}
	}
}
