package testkit

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// MetricFamily is what a /metrics page's comment lines say of one family.
type MetricFamily struct {
	Help, Type string
}

// MetricFamilies reads the # HELP and # TYPE lines of a Prometheus text
// page, by family name (help unescaped).
func MetricFamilies(page string) map[string]MetricFamily {
	fams := map[string]MetricFamily{}
	unescape := strings.NewReplacer(`\\`, `\`, `\n`, "\n")
	for _, l := range strings.Split(page, "\n") {
		for _, kind := range []string{"# HELP ", "# TYPE "} {
			rest, ok := strings.CutPrefix(l, kind)
			if !ok {
				continue
			}
			name, text, _ := strings.Cut(rest, " ")
			f := fams[name]
			if kind == "# HELP " {
				f.Help = unescape.Replace(text)
			} else {
				f.Type = text
			}
			fams[name] = f
		}
	}
	return fams
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// MetricConventions says how a family breaks Prometheus' naming
// conventions, or nil: snake_case, _total exactly on counters, base
// units (no milliseconds, no "time" where a unit belongs), and help text
// that says more than the name.
func MetricConventions(name string, f MetricFamily) error {
	var errs []error
	if !snakeCase.MatchString(name) {
		errs = append(errs, errors.New("not snake_case"))
	}
	if (f.Type == "counter") != strings.HasSuffix(name, "_total") {
		errs = append(errs, fmt.Errorf("a %s, so _total only on counters", f.Type))
	}
	if strings.Contains(name, "Time") {
		errs = append(errs, errors.New(`"Time" in the name: a duration ends in _seconds`))
	}
	for _, word := range strings.Split(name, "_") {
		switch word {
		case "time", "ms", "msec", "millis", "milliseconds":
			errs = append(errs, fmt.Errorf("%q in the name: a duration ends in _seconds", word))
		}
	}
	help := strings.TrimSpace(f.Help)
	words := strings.NewReplacer("_", " ", ".", " ").Replace(name)
	if help == "" || help == name || strings.EqualFold(help, words) {
		errs = append(errs, fmt.Errorf("help %q repeats the name", f.Help))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
