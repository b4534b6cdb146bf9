package deploy

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// composeCommands returns each service's command list in a compose file
// of this repository's layout ("  nodeN:", then "    command:" and its
// "      - " items): enough to compare the two files without a YAML
// library in the root module.
func composeCommands(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cmds := map[string][]string{}
	service, inCommand := "", false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":"):
			service, inCommand = strings.TrimSuffix(strings.TrimSpace(line), ":"), false
		case line == "    command:":
			inCommand = true
		case inCommand && strings.HasPrefix(line, "      - "):
			cmds[service] = append(cmds[service], strings.TrimPrefix(line, "      - "))
		default:
			inCommand = false
		}
	}
	return cmds
}

// docker-compose.https.yml restates each node's command from
// docker-compose.yml with https:// in --advertise-url and nothing else
// changed, and gives every node the certificate's files and https:// join
// URLs.
func TestComposeHTTPSOverride(t *testing.T) {
	base, https := composeCommands(t, "../docker-compose.yml"), composeCommands(t, "../docker-compose.https.yml")
	for _, s := range services {
		want := slices.Clone(base[s])
		for i, a := range want {
			if strings.HasPrefix(a, "--advertise-url=") {
				want[i] = strings.Replace(a, "http://", "https://", 1)
			}
		}
		if len(want) == 0 || !slices.Equal(https[s], want) {
			t.Errorf("%s: the https command drifted from the base's:\n got %q\nwant %q", s, https[s], want)
		}
	}
	raw, _ := os.ReadFile("../docker-compose.https.yml")
	for _, want := range []string{"RESTAREA_HTTP_TLS_CERT: /tls/http.pem", "RESTAREA_HTTP_TLS_KEY: /tls/http-key.pem", "RESTAREA_HTTP_TLS_CA: /tls/ca.pem",
		"RESTAREA_JOIN: https://node1:8080,https://node2:8080,https://node3:8080", "./tls:/tls:ro"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("docker-compose.https.yml lacks %q", want)
		}
	}
}
