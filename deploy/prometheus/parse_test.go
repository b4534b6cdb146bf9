package prometheus

import (
	"fmt"
	"os"
	"strings"
)

// rule is one rule of the rules file: a recording rule (kind "record") or
// an alert (kind "alert"), its name, its PromQL and the line it starts on.
type rule struct {
	kind, name, expr string
	line             int
}

// readRules reads the rules of a Prometheus rules file written in the
// subset of YAML restarea.rules.yml uses: each rule starts with
// "- record: NAME" or "- alert: NAME", and its expr is either on its own
// line ("expr: QUERY", unquoted) or a literal block ("expr: |") of the
// lines indented further. Anything else that looks like an expr is an
// error, so that a change of style fails loudly instead of being
// skipped.
func readRules(path string) ([]rule, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(raw), "\n")
	var rules []rule
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		for _, kind := range []string{"record", "alert"} {
			if name, ok := strings.CutPrefix(t, "- "+kind+":"); ok {
				rules = append(rules, rule{kind: kind, name: strings.TrimSpace(name), line: i + 1})
			}
		}
		v, ok := strings.CutPrefix(t, "expr:")
		if !ok {
			continue
		}
		if len(rules) == 0 || rules[len(rules)-1].expr != "" {
			return nil, fmt.Errorf("%s:%d: an expr outside a rule, or a second one", path, i+1)
		}
		r := &rules[len(rules)-1]
		v = strings.TrimSpace(v)
		switch {
		case v == "|" || v == "|-":
			indent := len(l) - len(strings.TrimLeft(l, " "))
			var body []string
			for i+1 < len(lines) {
				next := lines[i+1]
				if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= indent {
					break
				}
				body = append(body, strings.TrimSpace(next))
				i++
			}
			r.expr = strings.TrimSpace(strings.Join(body, "\n"))
		case v == "" || strings.ContainsAny(v[:1], `"'>&*!%@`+"`"):
			return nil, fmt.Errorf("%s:%d: expr %q: write it unquoted on the line, or as a literal block (expr: |)", path, i+1, v)
		default:
			r.expr = v
		}
		if r.expr == "" {
			return nil, fmt.Errorf("%s:%d: empty expr", path, i+1)
		}
	}
	for _, r := range rules {
		if r.expr == "" {
			return nil, fmt.Errorf("%s:%d: %s %s has no expr", path, r.line, r.kind, r.name)
		}
	}
	return rules, nil
}

// promqlWords are the identifiers of PromQL that are not metric names:
// aggregations, keywords and functions (a function is also recognised by
// the parenthesis after it, but an aggregation may be followed by
// "by (...)" first).
var promqlWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
		by without on ignoring group_left group_right bool offset and or unless atan2
		inf nan start end`) {
		promqlWords[w] = true
	}
}

// metricNames returns the metric names expr selects, in order, each once.
// It is a tokenizer, not a parser: it skips string literals, what is
// between braces (label matchers) and brackets (ranges and subqueries),
// the label lists after by/without/on/ignoring/group_left/group_right,
// numbers and durations, Grafana variables ($name, ${name}), and every
// identifier followed by "(" (a function) or listed in promqlWords.
func metricNames(expr string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	isStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isPart := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[i])) {
			i++
		}
		return i
	}
	// skipTo returns the index after the close that matches the open at
	// expr[i], skipping string literals inside.
	skipTo := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(expr); j++ {
			switch c := expr[j]; {
			case c == '"' || c == '\'' || c == '`':
				k := strings.IndexByte(expr[j+1:], c)
				if k < 0 {
					return 0, fmt.Errorf("unterminated string in %q", expr)
				}
				j += k + 1
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unbalanced %c in %q", open, expr)
	}
	var err error
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			k := strings.IndexByte(expr[i+1:], c)
			if k < 0 {
				return nil, fmt.Errorf("unterminated string in %q", expr)
			}
			i += k + 2
		case c == '{':
			if i, err = skipTo(i, '{', '}'); err != nil {
				return nil, err
			}
		case c == '[':
			if i, err = skipTo(i, '[', ']'); err != nil {
				return nil, err
			}
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				if i, err = skipTo(i, '{', '}'); err != nil {
					return nil, err
				}
				continue
			}
			for i < len(expr) && isPart(expr[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			// A number (1e3, 0x1F, 1.5) or a duration (5m, 1h30m).
			for i < len(expr) && (isPart(expr[i]) || expr[i] == '.') {
				i++
			}
		case isStart(c):
			j := i
			for j < len(expr) && isPart(expr[j]) {
				j++
			}
			word := expr[i:j]
			next := skipSpace(j)
			switch {
			case word == "by" || word == "without" || word == "on" || word == "ignoring" ||
				word == "group_left" || word == "group_right":
				if next < len(expr) && expr[next] == '(' {
					if j, err = skipTo(next, '(', ')'); err != nil {
						return nil, err
					}
				}
			case promqlWords[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// A function.
			default:
				if !seen[word] {
					seen[word] = true
					names = append(names, word)
				}
			}
			i = j
		default:
			i++
		}
	}
	return names, nil
}
