package restarea

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limit is a count of events allowed in a sliding window.
type Limit struct {
	Count         int `json:"count"`
	WindowSeconds int `json:"window_seconds"`
}

// Window returns the window as a duration.
func (l Limit) Window() time.Duration { return time.Duration(l.WindowSeconds) * time.Second }

// Validate checks that l is usable; field names the setting in the error.
func (l Limit) Validate(field string) error {
	if l.Count < 1 || l.Count > 1_000_000 {
		return Errorf(CodeInvalidRequest, "%s.count must be between 1 and 1000000", field)
	}
	if l.WindowSeconds < 1 || l.WindowSeconds > 31*24*3600 {
		return Errorf(CodeInvalidRequest, "%s.window_seconds must be between 1 and 2678400", field)
	}
	return nil
}

// String formats l as the flag syntax, e.g. "30/60s".
func (l Limit) String() string { return fmt.Sprintf("%d/%ds", l.Count, l.WindowSeconds) }

// ParseLimit parses a rate such as "30/m", "2000/h", "5/10s" or "100/1d".
func ParseLimit(s string) (Limit, error) {
	count, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Limit{}, fmt.Errorf("rate %q: want COUNT/WINDOW, e.g. 30/m", s)
	}
	n, err := strconv.Atoi(count)
	if err != nil {
		return Limit{}, fmt.Errorf("rate %q: count: %v", s, err)
	}
	switch per {
	case "s", "m", "h", "d":
		per = "1" + per
	}
	d, err := ParseDuration(per)
	if err != nil {
		return Limit{}, fmt.Errorf("rate %q: window: %v", s, err)
	}
	if d%time.Second != 0 {
		return Limit{}, fmt.Errorf("rate %q: window must be whole seconds", s)
	}
	l := Limit{Count: n, WindowSeconds: int(d / time.Second)}
	if err := l.Validate("rate"); err != nil {
		return Limit{}, fmt.Errorf("rate %q: %s", s, ErrorMessage(err))
	}
	return l, nil
}

// ParseDuration is time.ParseDuration plus a "d" (24h) unit, e.g. "90d".
func ParseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > int(math.MaxInt64/int64(24*time.Hour)) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// Settings are the operator-controlled switches of docs/contract.md §5. They
// live in the replicated state, so every node enforces the same ones.
type Settings struct {
	WritesDisabled bool  `json:"writes_disabled"`
	PerSourceLimit Limit `json:"per_source_limit"`
	GlobalLimit    Limit `json:"global_limit"`
}

// DefaultSettings are in force until the configured ones are applied.
func DefaultSettings() Settings {
	return Settings{
		PerSourceLimit: Limit{Count: 30, WindowSeconds: 60},
		GlobalLimit:    Limit{Count: 2000, WindowSeconds: 3600},
	}
}

// SettingsPatch changes only the members it carries (PUT semantics of
// /api/v1/admin/settings).
type SettingsPatch struct {
	WritesDisabled *bool  `json:"writes_disabled,omitempty"`
	PerSourceLimit *Limit `json:"per_source_limit,omitempty"`
	GlobalLimit    *Limit `json:"global_limit,omitempty"`
}

// Validate checks every member that p carries.
func (p SettingsPatch) Validate() error {
	if p.PerSourceLimit != nil {
		if err := p.PerSourceLimit.Validate("per_source_limit"); err != nil {
			return err
		}
	}
	if p.GlobalLimit != nil {
		if err := p.GlobalLimit.Validate("global_limit"); err != nil {
			return err
		}
	}
	if p.WritesDisabled == nil && p.PerSourceLimit == nil && p.GlobalLimit == nil {
		return Errorf(CodeInvalidRequest, "settings: at least one of writes_disabled, per_source_limit, global_limit is required")
	}
	return nil
}

// Apply returns s with p's members applied.
func (p SettingsPatch) Apply(s Settings) Settings {
	if p.WritesDisabled != nil {
		s.WritesDisabled = *p.WritesDisabled
	}
	if p.PerSourceLimit != nil {
		s.PerSourceLimit = *p.PerSourceLimit
	}
	if p.GlobalLimit != nil {
		s.GlobalLimit = *p.GlobalLimit
	}
	return s
}
