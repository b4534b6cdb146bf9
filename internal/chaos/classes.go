package chaos

import (
	"fmt"
	"slices"
	"strings"
)

// optInClasses are the fault classes a run takes only when asked by
// name: they change more than the nodes' health.
var optInClasses = []string{ClassMembership, ClassRot}

// faultClasses resolves the classes a run asked for against those the
// driver supports: nil → the supported ones but the opt-in classes;
// "all" → every supported one.
func faultClasses(asked, supported []string) ([]string, error) {
	if len(asked) == 0 {
		var out []string
		for _, c := range supported {
			if !slices.Contains(optInClasses, c) {
				out = append(out, c)
			}
		}
		return out, nil
	}
	var out []string
	for _, c := range asked {
		switch {
		case c == "all":
			for _, s := range supported {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		case !slices.Contains(supported, c):
			return nil, fmt.Errorf("fault class %q is not supported here (supported: %s)", c, strings.Join(supported, ", "))
		case !slices.Contains(out, c):
			out = append(out, c)
		}
	}
	return out, nil
}

// ParseFaultClasses splits a comma-separated list of fault classes
// ("kill,membership", "all"); "" is nil, the default classes.
func ParseFaultClasses(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(strings.ToLower(c))
		if c == "" {
			return nil, fmt.Errorf("empty fault class in %q", s)
		}
		out = append(out, c)
	}
	return out, nil
}
