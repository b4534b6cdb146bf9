package systemd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

const (
	backupService = "restarea-backup.service"
	backupTimer   = "restarea-backup.timer"
	backupEnv     = "restarea-backup.env"
	backupDir     = "/var/lib/restarea-backups"
	credential    = "admin-token:/etc/restarea/admin-token"
)

// The backup service and its timer pass systemd-analyze verify without a
// warning, and the service's sandbox rates as well as the node's.
func TestBackupUnitsVerify(t *testing.T) {
	verifyUnits(t, backupService, backupTimer)
	checkExposure(t, backupService)
}

// The directives docs/systemd.md relies on: a daily, persistent timer
// starting the service; a one-shot run of `admin backup --dir --keep` as
// the node's user, writing only its state directory, the token given as
// a credential; an environment file naming only what admin reads.
func TestBackupUnitDirectives(t *testing.T) {
	timer := parseUnit(t, backupTimer)
	svc := parseUnit(t, backupService)
	want := func(u unit, file, section, key string, ok func(string) bool, what string) {
		t.Helper()
		v, set := u.get(section, key)
		if !set || !ok(v) {
			t.Errorf("%s: [%s] %s=%q: want %s", file, section, key, v, what)
		}
	}
	eq := func(s string) func(string) bool { return func(v string) bool { return v == s } }
	want(timer, backupTimer, "Timer", "OnCalendar", eq("daily"), "daily")
	want(timer, backupTimer, "Timer", "Persistent", isTrue, "yes (a missed day is made up for)")
	want(timer, backupTimer, "Timer", "Unit", eq(backupService), backupService)
	want(timer, backupTimer, "Install", "WantedBy", eq("timers.target"), "timers.target")

	want(svc, backupService, "Service", "Type", eq("oneshot"), "oneshot")
	want(svc, backupService, "Service", "ExecStart", func(v string) bool {
		return regexp.MustCompile(`^`+regexp.QuoteMeta(execPath+" admin backup --dir "+backupDir)+` --keep [1-9][0-9]* `).MatchString(v+" ") &&
			strings.Contains(v, "--admin-token-file ${CREDENTIALS_DIRECTORY}/admin-token")
	}, execPath+" admin backup --dir "+backupDir+" --keep N --admin-token-file ${CREDENTIALS_DIRECTORY}/admin-token")
	want(svc, backupService, "Service", "LoadCredential", eq(credential), credential)
	want(svc, backupService, "Service", "EnvironmentFile", eq("/etc/restarea/backup.env"), "the example's install path")
	want(svc, backupService, "Service", "StateDirectory", eq(filepath.Base(backupDir)), filepath.Base(backupDir))
	want(svc, backupService, "Service", "User", eq("restarea"), "the node's user")
	want(svc, backupService, "Service", "ProtectSystem", eq("strict"), "strict")
	if _, ok := svc["Install"]; ok {
		t.Errorf("%s has an [Install] section; the timer starts it", backupService)
	}

	// The example sets only what `restarea admin` reads from the
	// environment (its -h names each "env RESTAREA_..."), and never the
	// token, which is a credential.
	readByAdmin := map[string]bool{}
	help := adminHelp(t)
	for _, m := range regexp.MustCompile(`env (RESTAREA_[A-Z_]+)`).FindAllStringSubmatch(help, -1) {
		readByAdmin[m[1]] = true
	}
	if !readByAdmin["RESTAREA_SERVER"] {
		t.Fatalf("could not read admin's environment variables from its -h:\n%s", help)
	}
	env := envAssignments(t, backupEnv)
	for k := range env {
		if !readByAdmin[k] || k == "RESTAREA_ADMIN_TOKEN" {
			t.Errorf("%s sets %s, which restarea admin does not read (or must not: the token is a credential)", backupEnv, k)
		}
	}
	if env["RESTAREA_SERVER"] == "" {
		t.Errorf("%s does not set RESTAREA_SERVER", backupEnv)
	}
}

// adminHelp returns what `restarea admin -h` prints.
func adminHelp(t *testing.T) string {
	t.Helper()
	bin := testkit.Binary(t) // built before the bound starts: a first build is slow on a busy machine
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "admin", "-h")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("restarea admin -h: %v\n%s", err, stderr.String())
	}
	return stderr.String()
}

// The service's command line, as systemd would run it (the credential
// directory and the state directory put elsewhere, the example's
// environment with a loopback node for RESTAREA_SERVER), takes a checked
// backup into the directory.
func TestBackupUnitCommandRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts a node")
	}
	const token = "systemd-backup-test-token"
	n := testnode.Start(t, testnode.WithAdminToken(token))
	creds, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "admin-token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	line, _ := parseUnit(t, backupService).get("Service", "ExecStart")
	line = strings.NewReplacer(execPath, testkit.Binary(t), backupDir, dir, "${CREDENTIALS_DIRECTORY}", creds).Replace(line)
	args := strings.Fields(line)
	env := []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range envAssignments(t, backupEnv) {
		switch k {
		case "RESTAREA_SERVER":
			v = n.URL()
		case "RESTAREA_CA":
			continue // the test node serves plain http on loopback
		}
		env = append(env, k+"="+v)
	}
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("run %d of %s: %v\n%s", run, line, err, out)
		}
	}
	got, _ := filepath.Glob(filepath.Join(dir, "restarea-*.db"))
	if len(got) != 2 {
		t.Fatalf("%d backups in the directory after two runs, want 2: %v", len(got), got)
	}
}
