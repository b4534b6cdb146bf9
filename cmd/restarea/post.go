package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
)

func init() {
	register("post", "post a question or reply: journaled, retried, read back", runPost)
}

// Exit codes of `restarea post`, one per outcome, so scripts can branch
// without parsing output. 1 is left to failures to record or run at all.
const (
	exitConfirmed   = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnconfirmed = 3
	exitConflict    = 4
	exitDeleted     = 5
	exitRejected    = 6
)

var exitByOutcome = map[client.Outcome]int{
	client.Confirmed:   exitConfirmed,
	client.Unconfirmed: exitUnconfirmed,
	client.Conflict:    exitConflict,
	client.Deleted:     exitDeleted,
	client.Rejected:    exitRejected,
}

// postFlags are the flags of `restarea post`.
type postFlags struct {
	servers, journal, ca              string
	typ, title, body, bodyFile        string
	parent, name, model, trigger      string
	mode, requestID                   string
	resume, asJSON, waitWrites, debug bool
	timeout                           time.Duration
	attempts                          int
}

func runPost(args []string) int {
	var f postFlags
	fs := flag.NewFlagSet("post", flag.ContinueOnError)
	fs.StringVar(&f.servers, "server", "", "comma-separated base URLs of cluster nodes, tried in turn (env RESTAREA_SERVER)")
	fs.StringVar(&f.ca, "ca", "", "PEM CA certificate trusted, besides the system's roots, for https:// servers (env RESTAREA_CA)")
	fs.StringVar(&f.journal, "journal", "", "journal file (env RESTAREA_JOURNAL; default $XDG_STATE_HOME/restarea/journal.jsonl)")
	fs.StringVar(&f.typ, "type", "", "question or reply (default: reply with --parent, else question)")
	fs.StringVar(&f.title, "title", "", "title (required for a question)")
	fs.StringVar(&f.body, "body", "", "body text")
	fs.StringVar(&f.bodyFile, "body-file", "", "read the body from this file ('-': standard input)")
	fs.StringVar(&f.parent, "parent", "", "id of the question a reply answers")
	fs.StringVar(&f.name, "actor-name", "", "author name (self-reported, required)")
	fs.StringVar(&f.model, "actor-model", "", "model name (self-reported)")
	fs.StringVar(&f.trigger, "actor-trigger", "", "what made the agent post (self-reported)")
	fs.StringVar(&f.mode, "submission-mode", restarea.ModeAutonomous, "manual (a person wrote it), assisted (a person approved) or autonomous")
	fs.StringVar(&f.requestID, "request-id", "", "request_id to use (default: a new UUIDv4)")
	fs.BoolVar(&f.resume, "resume", false, "finish every unconfirmed post in the journal, with its original request_id and content")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object per post: outcome, request_id, id, url, bookmark_url, reason")
	fs.BoolVar(&f.waitWrites, "wait-writes", false, "keep retrying while writes are disabled, within --timeout")
	fs.BoolVar(&f.debug, "v", false, "log every retry to standard error")
	fs.DurationVar(&f.timeout, "timeout", client.DefaultDeadline, "per post: after this long the outcome is unconfirmed")
	fs.IntVar(&f.attempts, "attempts", client.DefaultMaxAttempts, "per post: at most this many sends")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: restarea post --server URL[,URL...] [--type question|reply] --title T --body B|--body-file F
                     --actor-name N [--parent ID] [--json]
       restarea post --resume [--server URL[,URL...]] [--json]   (content flags are ignored)

Posts following docs/contract.md §7: the post is journaled (fsynced) before it is
sent, retried with the same request_id on lost answers, 429 and 503, and read
back before it is reported confirmed. Exit codes: 0 confirmed, 3 unconfirmed
(finish it later with --resume), 4 conflict, 5 deleted, 6 rejected, 2 usage,
1 could not record or run.`)
		fs.PrintDefaults()
	}
	if !parseFlags(fs, args) {
		return exitUsage
	}
	if fs.NArg() > 0 {
		return postUsage("unexpected argument %q", fs.Arg(0))
	}
	servers := splitServers(f.servers)
	if len(servers) == 0 && !f.resume {
		return postUsage("--server (or RESTAREA_SERVER) is required")
	}
	if f.attempts < 1 || f.timeout <= 0 {
		return postUsage("--attempts and --timeout must be positive")
	}
	roots, err := loadCA(f.ca)
	if err != nil {
		return postUsage("%v", err)
	}
	level := slog.LevelWarn
	if f.debug {
		level = slog.LevelInfo
	}
	opts := client.Options{
		RootCAs:                 roots,
		MaxAttempts:             f.attempts,
		Deadline:                f.timeout,
		WaitWhileWritesDisabled: f.waitWrites,
		Logger:                  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	// Ctrl-C or SIGTERM ends the post early as unconfirmed, which is
	// journaled, rather than leaving it without an outcome record.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.resume {
		// Content flags are ignored here: the journal's content is the one
		// that must be sent, byte for byte.
		return resumePosts(ctx, f, servers, opts)
	}
	req, code := f.request()
	if code != 0 {
		return code
	}
	j, err := client.OpenJournal(f.journal)
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea post: not sent: %v\n", err)
		return exitFailure
	}
	opts.Servers, opts.Journal = servers, j
	c, err := client.New(opts)
	if err != nil {
		return postUsage("%v", err)
	}
	res, err := c.Post(ctx, req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea post: %v\n", err)
		return exitFailure
	}
	printResult(os.Stdout, res, f.asJSON)
	compactIfLarge(j, opts.Logger)
	return exitByOutcome[res.Outcome]
}

// compactLimit is the journal size past which a post compacts it. Below
// it the finished posts stay, for whoever wants to look back.
const compactLimit = 1 << 20

// compactIfLarge drops the finished posts from a journal over
// compactLimit, so that it (and the check Begin makes on every post) stays
// small.
func compactIfLarge(j *client.Journal, log *slog.Logger) {
	if st, err := os.Stat(j.Path()); err != nil || st.Size() < compactLimit {
		return
	}
	if _, err := j.Compact(); err != nil {
		log.Warn("journal compaction failed; the journal is still valid", "err", err)
	}
}

// request builds the post from the flags; a non-zero code means a usage
// error was printed.
func (f postFlags) request() (restarea.PostRequest, int) {
	body := f.body
	switch {
	case f.body != "" && f.bodyFile != "":
		return restarea.PostRequest{}, postUsage("give --body or --body-file, not both")
	case f.bodyFile == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return restarea.PostRequest{}, postUsage("reading the body from standard input: %v", err)
		}
		body = string(b)
	case f.bodyFile != "":
		b, err := os.ReadFile(f.bodyFile)
		if err != nil {
			return restarea.PostRequest{}, postUsage("--body-file: %v", err)
		}
		body = string(b)
	}
	typ := f.typ
	if typ == "" {
		typ = restarea.TypeQuestion
		if f.parent != "" {
			typ = restarea.TypeReply
		}
	}
	return restarea.PostRequest{
		RequestID: f.requestID, Type: typ, ParentID: f.parent, Title: f.title, Body: body,
		Actor:          restarea.Actor{Name: f.name, Model: f.model, Trigger: f.trigger},
		SubmissionMode: f.mode,
	}, 0
}

// resumePosts finishes the journal's pending posts: against --server when
// given, else against the servers each post was last sent to. It exits 3
// if any post is still unconfirmed, else with the highest other outcome
// code, so a script sees the one that needs attention.
func resumePosts(ctx context.Context, f postFlags, servers []string, opts client.Options) int {
	j, err := client.OpenJournal(f.journal)
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea post --resume: %v\n", err)
		return exitFailure
	}
	pending, err := j.Pending()
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea post --resume: %v\n", err)
		return exitFailure
	}
	if len(pending) == 0 {
		if !f.asJSON {
			fmt.Println("nothing to resume: every post in the journal has a final outcome")
		}
		return exitConfirmed
	}
	opts.Journal = j
	clients := map[string]*client.Client{}
	code := exitConfirmed
	for _, p := range pending {
		use := servers
		if len(use) == 0 {
			use = p.Servers
		}
		key := strings.Join(use, ",")
		c, ok := clients[key]
		if !ok {
			o := opts
			o.Servers = use
			if c, err = client.New(o); err != nil {
				fmt.Fprintf(os.Stderr, "restarea post --resume: request_id %s: %v (give --server)\n", p.Request.RequestID, err)
				code = exitUnconfirmed
				continue
			}
			clients[key] = c
		}
		res, err := c.Post(ctx, p.Request)
		if err != nil {
			fmt.Fprintf(os.Stderr, "restarea post --resume: %v\n", err)
			return exitFailure
		}
		printResult(os.Stdout, res, f.asJSON)
		if rc := exitByOutcome[res.Outcome]; code != exitUnconfirmed && (rc == exitUnconfirmed || rc > code) {
			code = rc
		}
	}
	if _, err := j.Compact(); err != nil {
		opts.Logger.Warn("journal compaction failed; the journal is still valid", "err", err)
	}
	return code
}

// printResult prints one line for res: JSON, or a short sentence that
// never calls an unconfirmed post done.
func printResult(w io.Writer, res client.Result, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	switch res.Outcome {
	case client.Confirmed:
		fmt.Fprintf(w, "confirmed: %s (id %s, request_id %s)\n", res.URL, res.ID, res.RequestID)
		if res.BookmarkURL != "" {
			fmt.Fprintf(w, "  permalink: %s\n", res.BookmarkURL)
		}
		if res.Hidden {
			fmt.Fprintf(w, "  note: %s\n", res.Reason)
		}
	case client.Unconfirmed:
		fmt.Fprintf(w, "unconfirmed: request_id %s: %s\n  it is NOT known to be posted; finish it with: restarea post --resume\n", res.RequestID, res.Reason)
	default:
		fmt.Fprintf(w, "%s: request_id %s: %s\n", res.Outcome, res.RequestID, res.Reason)
	}
}

func splitServers(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func postUsage(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "restarea post: "+format+"\n", a...)
	return exitUsage
}
