package kubernetes

import (
	"maps"
	"slices"
	"testing"
)

func TestExpandFollowsKubernetes(t *testing.T) {
	vals := map[string]string{"A": "x", "POD_NAME": "restarea-1"}
	for in, want := range map[string]string{
		"$(A)":                 "x",
		"--id=$(POD_NAME).p":   "--id=restarea-1.p",
		"$$(A)":                "$(A)",
		"$(UNKNOWN)":           "$(UNKNOWN)",
		"$(A":                  "$(A",
		"cost $5 and $":        "cost $5 and $",
		"$(A)$(A)-$(POD_NAME)": "xx-restarea-1",
	} {
		if got := expand(in, vals); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// The pod the simulation runs is the one the manifest describes: names,
// advertised addresses and secrets filled in as the kubelet would.
func TestPodForFillsDownwardAPIAndSecrets(t *testing.T) {
	b := loadBase(t)
	secret := map[string]string{"cluster-secret": "s3cret-s3cret-s3cret", "admin-token": "t0ken-t0ken-t0ken-t0ken"}
	p, err := podFor(b, 1, "team-a", secret)
	if err != nil {
		t.Fatal(err)
	}
	const dns = "restarea-1.restarea-peers.team-a.svc.cluster.local"
	if p.name != "restarea-1" || p.dnsName != dns {
		t.Errorf("pod %q dns %q", p.name, p.dnsName)
	}
	for name, want := range map[string]string{
		"node-id":        "restarea-1",
		"raft-advertise": dns + ":8300",
		"advertise-url":  "http://" + dns + ":8080",
		"join": "http://restarea-0.restarea-peers.team-a.svc.cluster.local:8080," +
			"http://restarea-1.restarea-peers.team-a.svc.cluster.local:8080," +
			"http://restarea-2.restarea-peers.team-a.svc.cluster.local:8080",
	} {
		if got, _ := arg(p.args, name); got != want {
			t.Errorf("--%s=%q, want %q", name, got, want)
		}
	}
	for _, kv := range []string{"POD_NAME=restarea-1", "POD_NAMESPACE=team-a",
		"RESTAREA_CLUSTER_SECRET_FILE=/etc/restarea/secrets/cluster-secret", "RESTAREA_ADMIN_TOKEN_FILE=/etc/restarea/secrets/admin-token",
		"RESTAREA_PUBLIC_URL=http://restarea.team-a.svc.cluster.local:8080"} {
		if !slices.Contains(p.env, kv) {
			t.Errorf("env lacks %s: %v", kv, p.envNames())
		}
	}
	if p.user != "65532:65532" || !p.readOnly || !p.noNewPrivileges || !slices.Equal(p.capDrop, []string{"ALL"}) {
		t.Errorf("security: user %s read-only %v no-new-privileges %v cap-drop %v", p.user, p.readOnly, p.noNewPrivileges, p.capDrop)
	}
	if len(p.secretDirs) != 1 || p.secretDirs[0].mountPath != "/etc/restarea/secrets" || !maps.Equal(p.secretDirs[0].files, secret) {
		t.Errorf("secret directories %+v, want the Secret's keys as files in /etc/restarea/secrets", p.secretDirs)
	}
	if p.dataMount != "/data" || p.httpPort != 8080 || p.grace < 20 {
		t.Errorf("mount %s port %d grace %d", p.dataMount, p.httpPort, p.grace)
	}
	if _, err := podFor(b, 0, "default", map[string]string{"cluster-secret": "x"}); err == nil {
		t.Error("a Secret without admin-token was accepted")
	}
}
