package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/internal/server"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// plainRefusal is what `restarea admin` says when it will not send the
// token over plain http:// beyond loopback.
const plainRefusal = "the admin token would cross the network in clear"

// `restarea admin` refuses plain http:// to a server beyond loopback
// before any connection (exit 2, with why and how to fix it), sends it
// with --insecure (and then fails to connect: a different error), and
// takes http:// to loopback as it is.
func TestAdminRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	cli := adminCLI{t: t, env: []string{"RESTAREA_ADMIN_TOKEN=" + testAdminToken}}
	// 192.0.2.1 is a documentation address: nothing answers there.
	code, _, errOut := cli.run("status", "--server", "http://192.0.2.1:8080")
	if code != adminUsage || !strings.Contains(errOut, plainRefusal) || !strings.Contains(errOut, "nothing was sent") ||
		!strings.Contains(errOut, "--http-tls-cert") || !strings.Contains(errOut, "https://") || !strings.Contains(errOut, "--insecure") {
		t.Fatalf("plain http:// beyond loopback: exit %d, want %d with why and how to fix it:\n%s", code, adminUsage, errOut)
	}
	// One such server among others is enough to refuse.
	if code, _, errOut := cli.run("status", "--server", deadURL(t)+",http://example.org"); code != adminUsage || !strings.Contains(errOut, plainRefusal) {
		t.Fatalf("a list with one plain http:// server beyond loopback: exit %d:\n%s", code, errOut)
	}
	code, _, errOut = cli.run("status", "--server", "http://192.0.2.1:8080", "--insecure", "--timeout", "2s")
	if code != adminUnavailable || strings.Contains(errOut, plainRefusal) {
		t.Fatalf("with --insecure: exit %d, want %d (a connection failure, not the refusal):\n%s", code, adminUnavailable, errOut)
	}
	// --insecure never comes from the environment.
	cli.env = append(cli.env, "RESTAREA_INSECURE=true")
	if code, _, errOut := cli.run("status", "--server", "http://192.0.2.1:8080"); code != adminUsage || !strings.Contains(errOut, plainRefusal) {
		t.Fatalf("RESTAREA_INSECURE in the environment lifted the refusal: exit %d:\n%s", code, errOut)
	}

	n := testnode.Start(t, testnode.WithAdminToken(testAdminToken))
	for _, base := range []string{n.URL(), strings.Replace(n.URL(), "127.0.0.1", "localhost", 1)} {
		cli.want(adminOK, "settings", "get", "--server", base)
	}
}

// Over https:// with --ca: `restarea admin`, `get` and `post` reach a
// node whose certificate comes from a private CA; without --ca the
// certificate is refused. A member URL in plain http:// beyond loopback
// is not asked for its view.
func TestAdminAndClientsOverHTTPS(t *testing.T) {
	h := testnode.NewHTTPS(t)
	n := testnode.Start(t, h.Option(t), testnode.WithAdminToken(testAdminToken))
	cli := adminCLI{t: t, env: []string{"RESTAREA_ADMIN_TOKEN=" + testAdminToken, "RESTAREA_SERVER=" + n.URL()}}

	var view client.ClusterView
	cli.json(&view, "status", "--ca", h.CAFile)
	if len(view.Nodes) != 1 || !view.Nodes[0].Reachable || !strings.HasPrefix(view.Nodes[0].URL, "https://") {
		t.Fatalf("status over https: %+v", view)
	}
	code, _, errOut := cli.run("status")
	if code != adminUnavailable || !strings.Contains(errOut, "certificate") {
		t.Fatalf("without --ca: exit %d, want %d with a certificate error:\n%s", code, adminUnavailable, errOut)
	}
	if code, _, errOut := cli.run("status", "--ca", filepath.Join(t.TempDir(), "missing.pem")); code != adminUsage || !strings.Contains(errOut, "--ca") {
		t.Fatalf("a missing --ca file: exit %d:\n%s", code, errOut)
	}

	journal := filepath.Join(t.TempDir(), "journal.jsonl")
	code, out, errOut := run(t, "post", "--server", n.URL(), "--ca", h.CAFile, "--journal", journal, "--json",
		"--title", "posted over https", "--body", "with a private CA", "--actor-name", "https-test")
	var res client.Result
	if code != exitConfirmed || json.Unmarshal([]byte(out), &res) != nil || res.ID == "" {
		t.Fatalf("post over https: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, "get", "--server", n.URL(), "--ca", h.CAFile, res.ID)
	if code != 0 || !strings.Contains(out, "posted over https") {
		t.Fatalf("get over https: exit %d\n%s\n%s", code, out, errOut)
	}

	// A member recorded with a plain http:// URL beyond loopback: status
	// lists it without sending the token there.
	m := testnode.Start(t, h.Option(t), testnode.WithAdminToken(testAdminToken),
		testnode.WithConfig(func(c *server.Config) { c.AdvertiseURL = "http://192.0.2.1:9" }))
	// A new leader records its own URL through the log moments after it
	// is elected.
	testkit.Eventually(t, 20*time.Second, "the member's URL recorded", func() error {
		st, err := m.ClusterStatus(context.Background())
		if err == nil && (len(st.Members) != 1 || st.Members[0].URL != "http://192.0.2.1:9") {
			err = fmt.Errorf("members %+v", st.Members)
		}
		return err
	})
	cli.env = []string{"RESTAREA_ADMIN_TOKEN=" + testAdminToken, "RESTAREA_SERVER=" + m.URL(), "RESTAREA_CA=" + h.CAFile}
	view = client.ClusterView{}
	cli.json(&view, "status")
	if len(view.Nodes) != 1 || view.Nodes[0].Reachable || !strings.Contains(view.Nodes[0].Error, "not asked") {
		t.Fatalf("a plain http:// member URL beyond loopback: %+v", view.Nodes)
	}
	out = cli.want(adminOK, "status")
	if !strings.Contains(out, "not asked") || !strings.Contains(out, "--insecure") {
		t.Errorf("the status table does not say why the member was not asked:\n%s", out)
	}
}
