package httpx

import (
	"net/http/httptest"
	"testing"
)

func TestOriginRule(t *testing.T) {
	tests := []struct {
		origin, host string
		allowed      []string
		want         bool
	}{
		{"https://rest.example", "rest.example", nil, true},
		{"https://rest.example", "rest.example:443", nil, true},
		{"https://rest.example:443", "rest.example", nil, true},
		{"http://rest.example", "rest.example:80", nil, true},
		{"http://rest.example:8080", "rest.example:8080", nil, true},
		{"http://rest.example:8080", "rest.example:8081", nil, false},
		{"https://rest.example", "rest.example:80", nil, false},
		{"https://app.example", "rest.example", []string{"https://app.example/"}, true},
		{"https://app.example.evil", "rest.example", []string{"https://app.example"}, false},
		{"javascript://rest.example", "rest.example", nil, false},
	}
	for _, tt := range tests {
		if got := OriginAllowed(tt.origin, tt.host, tt.allowed); got != tt.want {
			t.Errorf("origin %q host %q allowed %v: %v, want %v", tt.origin, tt.host, tt.allowed, got, tt.want)
		}
	}
}

func TestCrossSite(t *testing.T) {
	allowed := []string{"https://agents.example"}
	for _, tt := range []struct {
		name    string
		headers map[string]string
		refused bool
	}{
		{"curl: no Origin, no Sec-Fetch-Site", nil, false},
		{"same origin", map[string]string{"Origin": "http://rest.example", "Sec-Fetch-Site": "same-origin"}, false},
		{"same origin, default port spelled", map[string]string{"Origin": "http://rest.example:80"}, false},
		{"another site", map[string]string{"Origin": "http://evil.example"}, true},
		{"another site, Sec-Fetch-Site too", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, true},
		{"another port", map[string]string{"Origin": "http://rest.example:8081"}, true},
		{"null origin", map[string]string{"Origin": "null"}, true},
		{"allowed origin, cross-site", map[string]string{"Origin": "https://agents.example", "Sec-Fetch-Site": "cross-site"}, false},
		{"allowed origin, other case", map[string]string{"Origin": "HTTPS://AGENTS.EXAMPLE"}, false},
		{"cross-site without Origin", map[string]string{"Sec-Fetch-Site": "cross-site"}, true},
		{"cross-site without Origin, other case", map[string]string{"Sec-Fetch-Site": "Cross-Site"}, true},
		{"same-site without Origin", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"user typed it", map[string]string{"Sec-Fetch-Site": "none"}, false},
	} {
		r := httptest.NewRequest("POST", "http://rest.example/api/v1/entries", nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		reason, refused := CrossSite(r, allowed)
		if refused != tt.refused {
			t.Errorf("%s: refused %v (%q), want %v", tt.name, refused, reason, tt.refused)
		}
		if refused && reason == "" {
			t.Errorf("%s: refused without a reason", tt.name)
		}
	}
}

func TestOriginOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://Board.Example/": "https://board.example",
		"http://127.0.0.1:8080":  "http://127.0.0.1:8080",
		"https://b.example/x?y":  "https://b.example",
		"ftp://b.example":        "",
		"/relative":              "",
		"":                       "",
	} {
		if got := OriginOf(in); got != want {
			t.Errorf("OriginOf(%q) = %q, want %q", in, got, want)
		}
	}
}
