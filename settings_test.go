package restarea_test

import (
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea"
)

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in      string
		want    restarea.Limit
		wantErr string
	}{
		{in: "30/m", want: restarea.Limit{Count: 30, WindowSeconds: 60}},
		{in: "2000/h", want: restarea.Limit{Count: 2000, WindowSeconds: 3600}},
		{in: "5/10s", want: restarea.Limit{Count: 5, WindowSeconds: 10}},
		{in: "1/1d", want: restarea.Limit{Count: 1, WindowSeconds: 86400}},
		{in: "100/d", want: restarea.Limit{Count: 100, WindowSeconds: 86400}},
		{in: "7/s", want: restarea.Limit{Count: 7, WindowSeconds: 1}},
		{in: "10/1m30s", want: restarea.Limit{Count: 10, WindowSeconds: 90}},
		{in: "10/1.5m", want: restarea.Limit{Count: 10, WindowSeconds: 90}},
		{in: " 30/m ", want: restarea.Limit{Count: 30, WindowSeconds: 60}},
		{in: "1000000/31d", want: restarea.Limit{Count: 1000000, WindowSeconds: 31 * 86400}},
		{in: "", wantErr: "COUNT/WINDOW"},
		{in: "30", wantErr: "COUNT/WINDOW"},
		{in: "30m", wantErr: "COUNT/WINDOW"},
		{in: "/m", wantErr: "count"},
		{in: "x/m", wantErr: "count"},
		{in: "3.5/m", wantErr: "count"},
		{in: "30 /m", wantErr: "count"},
		{in: "30/", wantErr: "window"},
		{in: "30/x", wantErr: "window"},
		{in: "30/minute", wantErr: "window"},
		{in: "30/m/h", wantErr: "window"},
		{in: "30/-1d", wantErr: "window"},
		{in: "0/m", wantErr: "count"},
		{in: "-1/m", wantErr: "count"},
		{in: "1000001/m", wantErr: "count"},
		{in: "30/0s", wantErr: "window"},
		{in: "30/-10s", wantErr: "window"},
		{in: "30/500ms", wantErr: "window"},
		{in: "30/1500ms", wantErr: "whole seconds"},
		{in: "30/32d", wantErr: "window"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := restarea.ParseLimit(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseLimit(%q) = %+v, want an error containing %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.in) {
					t.Fatalf("error %q does not contain %q and the input", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLimit(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseLimit(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			// String gives back a form that parses to the same limit.
			again, err := restarea.ParseLimit(got.String())
			if err != nil || again != got {
				t.Fatalf("ParseLimit(%q) = %+v, %v; want %+v", got.String(), again, err, got)
			}
		})
	}
}

func TestLimitString(t *testing.T) {
	l := restarea.Limit{Count: 30, WindowSeconds: 60}
	if got := l.String(); got != "30/60s" {
		t.Fatalf("String = %q", got)
	}
	if got := l.Window(); got != time.Minute {
		t.Fatalf("Window = %v", got)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "90d", want: 90 * 24 * time.Hour},
		{in: "1d", want: 24 * time.Hour},
		{in: "0d", want: 0},
		{in: "30d", want: 30 * 24 * time.Hour},
		{in: "36h", want: 36 * time.Hour},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "10s", want: 10 * time.Second},
		{in: "106751d", want: 106751 * 24 * time.Hour},
		{in: "", wantErr: true},
		{in: "d", wantErr: true},
		{in: "bad", wantErr: true},
		{in: "90", wantErr: true},
		{in: "1.5d", wantErr: true},
		{in: "-1d", wantErr: true},
		{in: "90 d", wantErr: true},
		{in: "1d12h", wantErr: true},
		{in: "106752d", wantErr: true},        // overflows time.Duration
		{in: "9999999999999d", wantErr: true}, // overflows time.Duration
		{in: "99999999999999999999d", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := restarea.ParseDuration(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseDuration(%q) = %v, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestLimitValidate(t *testing.T) {
	tests := []struct {
		name    string
		l       restarea.Limit
		wantErr string
	}{
		{"minimum", restarea.Limit{Count: 1, WindowSeconds: 1}, ""},
		{"maximum", restarea.Limit{Count: 1_000_000, WindowSeconds: 31 * 24 * 3600}, ""},
		{"default per source", restarea.DefaultSettings().PerSourceLimit, ""},
		{"default global", restarea.DefaultSettings().GlobalLimit, ""},
		{"zero count", restarea.Limit{Count: 0, WindowSeconds: 60}, "f.count"},
		{"negative count", restarea.Limit{Count: -1, WindowSeconds: 60}, "f.count"},
		{"count too large", restarea.Limit{Count: 1_000_001, WindowSeconds: 60}, "f.count"},
		{"zero window", restarea.Limit{Count: 1, WindowSeconds: 0}, "f.window_seconds"},
		{"negative window", restarea.Limit{Count: 1, WindowSeconds: -1}, "f.window_seconds"},
		{"window too large", restarea.Limit{Count: 1, WindowSeconds: 31*24*3600 + 1}, "f.window_seconds"},
		{"zero value", restarea.Limit{}, "f.count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate("f")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			wantInvalid(t, err, tt.wantErr)
		})
	}
}

func TestDefaultSettings(t *testing.T) {
	s := restarea.DefaultSettings()
	want := restarea.Settings{
		PerSourceLimit: restarea.Limit{Count: 30, WindowSeconds: 60},
		GlobalLimit:    restarea.Limit{Count: 2000, WindowSeconds: 3600},
	}
	if s != want {
		t.Fatalf("DefaultSettings = %+v, want %+v", s, want)
	}
}

func TestSettingsPatch(t *testing.T) {
	yes, no := true, false
	per := restarea.Limit{Count: 5, WindowSeconds: 10}
	glob := restarea.Limit{Count: 100, WindowSeconds: 3600}
	bad := restarea.Limit{Count: 0, WindowSeconds: 10}
	base := restarea.Settings{
		WritesDisabled: true,
		PerSourceLimit: restarea.Limit{Count: 30, WindowSeconds: 60},
		GlobalLimit:    restarea.Limit{Count: 2000, WindowSeconds: 3600},
	}
	tests := []struct {
		name     string
		patch    restarea.SettingsPatch
		wantErr  string // field named first in the message
		want     restarea.Settings
		noChange bool
	}{
		{name: "empty patch refused", patch: restarea.SettingsPatch{}, wantErr: "settings:"},
		{name: "writes_disabled false", patch: restarea.SettingsPatch{WritesDisabled: &no},
			want: restarea.Settings{WritesDisabled: false, PerSourceLimit: base.PerSourceLimit, GlobalLimit: base.GlobalLimit}},
		{name: "writes_disabled true (same value)", patch: restarea.SettingsPatch{WritesDisabled: &yes}, want: base},
		{name: "per_source_limit only", patch: restarea.SettingsPatch{PerSourceLimit: &per},
			want: restarea.Settings{WritesDisabled: true, PerSourceLimit: per, GlobalLimit: base.GlobalLimit}},
		{name: "global_limit only", patch: restarea.SettingsPatch{GlobalLimit: &glob},
			want: restarea.Settings{WritesDisabled: true, PerSourceLimit: base.PerSourceLimit, GlobalLimit: glob}},
		{name: "everything", patch: restarea.SettingsPatch{WritesDisabled: &no, PerSourceLimit: &per, GlobalLimit: &glob},
			want: restarea.Settings{PerSourceLimit: per, GlobalLimit: glob}},
		{name: "bad per_source_limit", patch: restarea.SettingsPatch{PerSourceLimit: &bad}, wantErr: "per_source_limit.count"},
		{name: "bad global_limit", patch: restarea.SettingsPatch{GlobalLimit: &bad}, wantErr: "global_limit.count"},
		{name: "bad global_limit with a good member", patch: restarea.SettingsPatch{WritesDisabled: &no, GlobalLimit: &restarea.Limit{Count: 1}}, wantErr: "global_limit.window_seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.patch.Validate()
			if tt.wantErr != "" {
				wantInvalid(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			before := base
			if got := tt.patch.Apply(base); got != tt.want {
				t.Fatalf("Apply = %+v, want %+v", got, tt.want)
			}
			if base != before {
				t.Fatal("Apply changed its argument")
			}
		})
	}
}

func TestParseConsistency(t *testing.T) {
	tests := []struct {
		in      string
		want    restarea.Consistency
		wantErr bool
	}{
		{"", restarea.ConsistencyLocal, false},
		{"local", restarea.ConsistencyLocal, false},
		{"default", restarea.ConsistencyLocal, false},
		{"strong", restarea.ConsistencyStrong, false},
		{"Strong", "", true},
		{"linearizable", "", true},
	}
	for _, tt := range tests {
		got, err := restarea.ParseConsistency(tt.in)
		if tt.wantErr {
			if restarea.ErrorCode(err) != restarea.CodeInvalidRequest || !strings.Contains(restarea.ErrorMessage(err), "consistency") {
				t.Errorf("ParseConsistency(%q) error = %v, want invalid_request naming consistency", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseConsistency(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
