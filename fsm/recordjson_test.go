package fsm

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
)

// sameDecoding fails t unless parseRecordJSON either refuses v or decodes
// it to what json.Unmarshal does; with mustAccept it must not refuse.
func sameDecoding(t *testing.T, v []byte, mustAccept bool) {
	t.Helper()
	got, ok := parseRecordJSON(v)
	if !ok {
		if mustAccept {
			t.Fatalf("parseRecordJSON refused what appendRecordJSON wrote: %s", v)
		}
		return
	}
	var want record
	if err := json.Unmarshal(v, &want); err != nil {
		t.Fatalf("parseRecordJSON accepted what json.Unmarshal refuses (%v): %q", err, v)
	}
	if !sameRecord(got, &want) {
		t.Fatalf("parseRecordJSON differs from json.Unmarshal for %q:\n got %#v\nwant %#v", v, got, &want)
	}
}

// sameRecord compares records field by field; times by instant, zone
// name and offset (each decode makes its own *time.Location).
func sameRecord(a, b *record) bool {
	an, ao := a.CreatedAt.Zone()
	bn, bo := b.CreatedAt.Zone()
	if !a.CreatedAt.Equal(b.CreatedAt) || an != bn || ao != bo || a.CreatedAt.Location() == time.UTC != (b.CreatedAt.Location() == time.UTC) {
		return false
	}
	x, y := *a, *b
	x.CreatedAt, y.CreatedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(x, y)
}

// Every record appendRecordJSON can write is read back by the fast path,
// to what encoding/json reads.
func TestParseRecordJSON(t *testing.T) {
	g := &recordGen{t: t, rng: rand.New(rand.NewSource(2))}
	for range 5000 {
		var r record
		g.fill(reflect.ValueOf(&r).Elem())
		b, ok := appendRecordJSON(nil, &r)
		if !ok {
			continue
		}
		sameDecoding(t, b, true)
	}
}

// Records written by json.Marshal before appendRecordJSON existed are the
// same bytes; anything else (other key order, spaces, unknown keys) is
// left to encoding/json and still decodes.
func TestDecodeRecordFallsBack(t *testing.T) {
	for _, v := range []string{
		`{"type":"question","id":"a","body":"b","actor":{"name":"n"},"submission_mode":"m","channel":"http","created_at":"2026-01-02T03:04:05Z","visible":true,"by_operator":false,"attempt_id":"x","seq":3}`,
		`{"id":"a", "type":"question","body":"b","actor":{"name":"n"},"submission_mode":"m","channel":"http","created_at":"2026-01-02T03:04:05Z","visible":true,"by_operator":false,"attempt_id":"x","seq":3}`,
		`{"id":"a","type":"question","body":"b\ud83d\ude00","actor":{"name":"n"},"submission_mode":"m","channel":"http","created_at":"2026-01-02T03:04:05Z","visible":true,"by_operator":false,"attempt_id":"x","seq":3,"extra":1}`,
	} {
		if _, ok := parseRecordJSON([]byte(v)); ok {
			t.Errorf("fast path accepted %s", v)
		}
		r, err := decodeRecord([]byte(v))
		if err != nil || r.ID != "a" || r.Seq != 3 || r.Type != restarea.TypeQuestion {
			t.Errorf("decodeRecord(%s) = %+v, %v", v, r, err)
		}
	}
}

func FuzzParseRecordJSON(f *testing.F) {
	g := &recordGen{t: f, rng: rand.New(rand.NewSource(3))}
	for range 20 {
		var r record
		g.fill(reflect.ValueOf(&r).Elem())
		if b, ok := appendRecordJSON(nil, &r); ok {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"a","type":"q","body":"\u00e9\/\"","actor":{"name":""},"submission_mode":"","channel":"","created_at":"2026-01-02T03:04:05.5+09:00","visible":false,"by_operator":true,"attempt_id":"","seq":0}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		sameDecoding(t, v, false)
	})
}

// BenchmarkDecodeRecord: a 512-byte question as the bench posts it, by
// the fast path and by encoding/json.
func BenchmarkDecodeRecord(b *testing.B) {
	r := &record{Entry: restarea.Entry{
		ID: "0192d6a4-7b8e-7c3e-9f00-000000000001", RequestID: "0192d6a4-7b8e-7c3e-9f00-000000000002",
		Type: restarea.TypeQuestion, Title: "benchmark question", Body: strings.Repeat("b", 512),
		Actor: restarea.Actor{Name: "restarea-bench", Model: "bench"}, SubmissionMode: restarea.ModeAutonomous,
		Channel: "http", CreatedAt: time.Unix(1764800000, 123000000).UTC(), Visible: true,
	}, AttemptID: "0192d6a4-7b8e-7c3e-9f00-000000000003", Seq: 123456}
	v, _ := appendRecordJSON(nil, r)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseRecordJSON(v); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for b.Loop() {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
