package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/internal/httpx"
)

func init() {
	register("admin", "operate a cluster: entries, settings, members, leader, backup, status", runAdmin)
}

// Exit codes of `restarea admin`, the same for every subcommand, so a
// script can tell "try again later" (3) from "wrong request" (1, 4) and
// "wrong credentials" (5) without reading the message.
const (
	adminOK           = 0
	adminRefused      = 1 // the server refused the request (4xx other than below, 5xx other than 503), or it could not run
	adminUsage        = 2 // bad flags or arguments; nothing was sent
	adminUnavailable  = 3 // no server answered, 503, 429, or a lost answer to a change that is not repeated
	adminNotFound     = 4 // no such entry or member
	adminUnauthorized = 5 // the admin token was refused (401, 403)
)

const adminHelp = `usage: restarea admin [flags] COMMAND [SUBCOMMAND] [ARGS] [flags]

commands:
  entries list [--limit N] [--cursor C] [--all] [--strong]   every entry, hidden ones included, newest first
  entries show ID [--strong]        one entry with request_id, channel and state
  entries hide ID                   hide from public reads (hiding twice is harmless)
  entries unhide ID                 make public again
  entries delete ID --yes           erase the text for good, keep a tombstone for the request_id
  settings get                      the settings in force
  settings set [--writes-disabled=true|false] [--rate-per-source 30/m] [--rate-global 2000/h]
                                    change only the settings given
  members list                      members with raft addresses and URLs
  members remove ID --yes           remove a server from the cluster
  leader transfer [--to ID]         hand leadership to ID, or to the most up-to-date voter
  backup -o FILE [--force]          a consistent copy of the state, written atomically
  backup --dir DIR [--keep N]       the same as DIR/restarea-<UTC time>.db, then only the newest N kept
  status                            every member's own view: state, leader, term, indexes, lag
  audit list [--limit N] [--cursor C]   operator actions from the replicated audit trail, newest first
  finalize-upgrade                  once every member runs the new release, raise the cluster version;
                                    older releases can then no longer start on its data or join

flags of every command (before the command or after it):
  --server URL[,URL...]   nodes, tried in turn (env RESTAREA_SERVER)
  --admin-token T         the admin bearer token, at least 16 bytes (env RESTAREA_ADMIN_TOKEN)
  --admin-token-file F    read the token from F instead (keeps it out of ps)
  --ca FILE               trust this CA (PEM), besides the system's roots, for https:// servers (env RESTAREA_CA)
  --insecure              allow plain http:// to servers and members beyond loopback (the token then
                          crosses the network in clear); refused without it
  --output table|json     json: the API's data as one JSON document (default table)
  --timeout D             give up on a request after D (default 30s; backup 10m)
  -v                      log every failover to standard error

Failover: every request moves to the next server when the connection
cannot be made; reads, hide, unhide, delete and settings set (harmless to
repeat) also move on after a lost answer or a 503. members remove and
leader transfer are not repeated once sent: a lost answer exits 3, check
with 'restarea admin status'.

exit codes:
  0  done
  1  refused by the server (400, 409, 5xx but 503, admin API off), or could not run
  2  usage: bad flags or arguments; nothing was sent
  3  unavailable: no server answered, 503, 429 (retry later), or outcome unknown
  4  not found: no such entry or member
  5  unauthorized: the admin token was refused (401, 403)

run 'restarea admin COMMAND SUBCOMMAND -h' for its flags`

// adminLeaf is one runnable admin command.
type adminLeaf func(name string, args []string) int

var adminTree = map[string]map[string]adminLeaf{
	"entries":  {"list": runEntriesList, "show": runEntriesShow, "hide": runEntriesHide, "unhide": runEntriesUnhide, "delete": runEntriesDelete},
	"settings": {"get": runSettingsGet, "set": runSettingsSet},
	"members":  {"list": runMembersList, "remove": runMembersRemove},
	"leader":   {"transfer": runLeaderTransfer},
	"backup":   {"": runBackup},
	"status":   {"": runStatus},
	"audit":    {"list": runAuditList},
	// finalize-upgrade: docs/upgrades.md.
	"finalize-upgrade": {"": runFinalizeUpgrade},
}

func runAdmin(args []string) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(os.Stderr, adminHelp)
		if len(args) == 0 {
			return adminUsage
		}
		return adminOK
	}
	lead, args, code, ok := leadingFlags(args)
	if !ok {
		return code
	}
	if isHelp(args[0]) {
		fmt.Fprintln(os.Stderr, adminHelp)
		return adminOK
	}
	group, ok := adminTree[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "restarea admin: unknown command %q\n\n%s\n", args[0], adminHelp)
		return adminUsage
	}
	if leaf, ok := group[""]; ok {
		return leaf(args[0], append(lead, args[1:]...))
	}
	if len(args) < 2 || isHelp(args[1]) {
		fmt.Fprintf(os.Stderr, "usage: restarea admin %s %s\n", args[0], strings.Join(subNames(group), "|"))
		if len(args) < 2 {
			return adminUsage
		}
		return adminOK
	}
	leaf, ok := group[args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "restarea admin %s: unknown subcommand %q; want %s\n", args[0], args[1], strings.Join(subNames(group), "|"))
		return adminUsage
	}
	return leaf(args[0]+" "+args[1], append(lead, args[2:]...))
}

// leadingFlags takes the flags of every command given before the command
// (`restarea admin --server URL status`) off args. It returns them, to be
// parsed by the command with its own, and the rest, which starts with the
// command. ok is false when the command must end with code: a flag
// unknown or malformed there, or no command after the flags.
func leadingFlags(args []string) (lead, rest []string, code int, ok bool) {
	if !strings.HasPrefix(args[0], "-") {
		return nil, args, 0, true
	}
	fs := newAdminFlags("", "").fs
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(os.Stderr, adminHelp)
		return nil, nil, adminOK, false
	case err != nil:
		fmt.Fprintf(os.Stderr, "restarea admin: %v (before the command only the flags of every command are taken; put a command's own flags after it)\n", err)
		return nil, nil, adminUsage, false
	case fs.NArg() == 0:
		fmt.Fprintf(os.Stderr, "restarea admin: a command is required after the flags\n\n%s\n", adminHelp)
		return nil, nil, adminUsage, false
	}
	rest = fs.Args()
	lead = args[:len(args)-len(rest)]
	// "--" ends the flags; the command's own parse must not see it first.
	if n := len(lead); n > 0 && lead[n-1] == "--" {
		lead = lead[:n-1]
	}
	return slices.Clone(lead), rest, 0, true
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" || a == "help" }

func subNames(group map[string]adminLeaf) []string {
	var names []string
	for _, n := range []string{"list", "show", "hide", "unhide", "delete", "get", "set", "remove", "transfer"} {
		if _, ok := group[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// adminFlags are the flags every admin command takes.
type adminFlags struct {
	name                      string
	servers, token, tokenFile string
	ca                        string
	insecure                  bool
	output                    string
	timeout                   time.Duration
	verbose                   bool
	fs                        *flag.FlagSet
	synopsis                  string
	defaultTimeout            time.Duration
}

// newAdminFlags returns the flag set of command name (e.g. "entries
// list"), with the common flags registered; synopsis is its usage line
// after "restarea admin NAME".
func newAdminFlags(name, synopsis string) *adminFlags {
	f := &adminFlags{name: name, synopsis: synopsis, defaultTimeout: 30 * time.Second}
	f.fs = flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	f.fs.StringVar(&f.servers, "server", "", "comma-separated base URLs of cluster nodes, tried in turn (env RESTAREA_SERVER)")
	f.fs.StringVar(&f.token, "admin-token", "", "admin bearer token, at least 16 bytes (env RESTAREA_ADMIN_TOKEN)")
	f.fs.StringVar(&f.tokenFile, "admin-token-file", "", "file holding the admin token (keeps it out of ps)")
	f.fs.StringVar(&f.ca, "ca", "", "PEM CA certificate trusted, besides the system's roots, for https:// servers (env RESTAREA_CA)")
	f.fs.BoolVar(&f.insecure, "insecure", false, "allow plain http:// to servers and member URLs beyond loopback: the admin token then crosses the network in clear")
	f.fs.StringVar(&f.output, "output", "table", "table or json (the API's data as one JSON document)")
	f.fs.DurationVar(&f.timeout, "timeout", 0, "give up on a request after this long (default 30s; backup 10m)")
	f.fs.BoolVar(&f.verbose, "v", false, "log every failover to standard error")
	f.fs.Usage = func() {
		fmt.Fprintf(f.fs.Output(), "usage: restarea admin %s %s\n\nexit codes: 0 done, 1 refused, 2 usage, 3 unavailable, 4 not found, 5 unauthorized\n", name, synopsis)
		f.fs.PrintDefaults()
	}
	return f
}

// parse parses args, flags and positional arguments mixed (`entries show
// ID --output json`), then the environment for --server and
// --admin-token only: a flag such as --yes must never come from the
// environment. It returns the positional arguments; ok is false after a
// usage error was printed (or help was asked, then code is 0).
func (f *adminFlags) parse(args []string, wantArgs int) (pos []string, code int, ok bool) {
	for {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, adminOK, false
			}
			return nil, adminUsage, false
		}
		if f.fs.NArg() == 0 {
			break
		}
		pos = append(pos, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if v, ok := os.LookupEnv("RESTAREA_SERVER"); ok && !set["server"] {
		f.servers = v
	}
	if v, ok := os.LookupEnv("RESTAREA_ADMIN_TOKEN"); ok && !set["admin-token"] && !set["admin-token-file"] {
		f.token = v
	}
	// --insecure is never read from the environment: sending the token in
	// clear is decided on the command line, where it can be seen.
	if v, ok := os.LookupEnv("RESTAREA_CA"); ok && !set["ca"] {
		f.ca = v
	}
	switch {
	case len(pos) != wantArgs:
		if wantArgs == 0 {
			return nil, f.usage("unexpected argument %q", pos[0]), false
		}
		return nil, f.usage("want %d argument(s): %s", wantArgs, f.synopsis), false
	case f.output != "table" && f.output != "json":
		return nil, f.usage("--output must be table or json, not %q", f.output), false
	case f.timeout < 0:
		return nil, f.usage("--timeout must be positive"), false
	}
	if f.timeout == 0 {
		f.timeout = f.defaultTimeout
	}
	return pos, 0, true
}

// usage prints a usage error and returns its exit code.
func (f *adminFlags) usage(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "restarea admin %s: %s\n", f.name, fmt.Sprintf(format, a...))
	return adminUsage
}

// admin builds the client from the flags; ok is false after a usage error
// was printed.
func (f *adminFlags) admin() (*client.Admin, bool) {
	servers := splitServers(f.servers)
	if len(servers) == 0 {
		f.usage("--server (or RESTAREA_SERVER) is required")
		return nil, false
	}
	token, err := loadSecret("admin-token", f.token, f.tokenFile)
	if err != nil {
		f.usage("%v", err)
		return nil, false
	}
	if len(token) == 0 {
		f.usage("--admin-token, --admin-token-file or RESTAREA_ADMIN_TOKEN is required")
		return nil, false
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	attempt := 10 * time.Second
	if f.timeout < attempt {
		attempt = f.timeout
	}
	roots, err := loadCA(f.ca)
	if err != nil {
		f.usage("%v", err)
		return nil, false
	}
	a, err := client.NewAdmin(string(token), client.Options{
		Servers: servers, Deadline: f.timeout, AttemptTimeout: attempt,
		RootCAs: roots, AllowPlainHTTP: f.insecure,
		// Three rounds over the servers: enough to ride out an election,
		// few enough that a dead cluster is reported within the timeout.
		MaxAttempts: 3 * len(servers),
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	if errors.Is(err, client.ErrPlainHTTP) {
		f.usage("refused, nothing was sent: %s (anyone on the path could read it and run every admin command). "+
			"Serve the public port over HTTPS (restarea serve --http-tls-cert, --http-tls-key; 'restarea tls http' issues them) "+
			"and use https:// here, with --ca for a private CA; or give --insecure to send the token in clear anyway", err)
		return nil, false
	}
	if err != nil {
		f.usage("%s", strings.TrimPrefix(err.Error(), "client: "))
		return nil, false
	}
	return a, true
}

// setup parses args and builds the client: the start of every command.
// ok is false when the command must end with code.
func (f *adminFlags) setup(args []string, wantArgs int) (a *client.Admin, pos []string, code int, ok bool) {
	pos, code, ok = f.parse(args, wantArgs)
	if !ok {
		return nil, nil, code, false
	}
	a, ok = f.admin()
	if !ok {
		return nil, nil, adminUsage, false
	}
	return a, pos, 0, true
}

// adminContext returns the context of one command: cancelled by Ctrl-C or
// SIGTERM.
func adminContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// fail prints err and returns its exit code.
func (f *adminFlags) fail(err error) int {
	code, msg := adminExit(err)
	fmt.Fprintf(os.Stderr, "restarea admin %s: %s\n", f.name, msg)
	return code
}

// adminExit maps an error of the admin client to the exit code and the
// message to print.
func adminExit(err error) (int, string) {
	var e *restarea.Error
	switch {
	case errors.Is(err, client.ErrOutcomeUnknown):
		return adminUnavailable, err.Error() + "; check with 'restarea admin status' or 'members list' before repeating it"
	case errors.Is(err, client.ErrUnreachable):
		return adminUnavailable, err.Error()
	case errors.Is(err, context.Canceled):
		return adminRefused, "interrupted"
	case !errors.As(err, &e):
		return adminRefused, err.Error()
	}
	msg := fmt.Sprintf("%d %s: %s", httpx.Status(e.Code), e.Code, e.Message)
	switch e.Code {
	case restarea.CodeUnauthorized, restarea.CodeForbidden:
		return adminUnauthorized, msg + " (check --admin-token: every node of a cluster has the same one)"
	case restarea.CodeNotFound:
		if strings.HasPrefix(e.Message, "no such endpoint") {
			// Every admin path answers this on a node without an admin
			// token: the thing asked for is not missing, the API is off.
			return adminRefused, msg + " (is the admin API on? a node started without --admin-token answers 404 to every admin path)"
		}
		return adminNotFound, msg
	case restarea.CodeUnavailable, restarea.CodeWritesDisabled, restarea.CodeRateLimited, restarea.CodeGlobalRateLimited:
		if e.RetryAfter > 0 {
			msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter.Round(time.Second))
		}
		return adminUnavailable, msg
	}
	return adminRefused, msg
}
