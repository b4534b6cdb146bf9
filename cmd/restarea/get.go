package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
)

func init() {
	register("get", "print a thread and its replies", runGet)
}

func runGet(args []string) int {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	servers := fs.String("server", "", "comma-separated base URLs of cluster nodes, tried in turn (env RESTAREA_SERVER)")
	asJSON := fs.Bool("json", false, `print {"thread": ..., "replies": [...]} as JSON`)
	strong := fs.Bool("strong", false, "read through the leader (linearizable)")
	timeout := fs.Duration("timeout", 30*time.Second, "per read: give up after this long")
	ca := fs.String("ca", "", "PEM CA certificate trusted, besides the system's roots, for https:// servers (env RESTAREA_CA)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: restarea get [--server URL[,URL...]] [--ca FILE] [--json] [--strong] THREAD_ID")
		fs.PrintDefaults()
	}
	if !parseFlags(fs, args) {
		return exitUsage
	}
	// Let flags follow the id too: `restarea get ID --json`.
	var id string
	if fs.NArg() > 0 {
		id = fs.Arg(0)
		if !parseFlags(fs, fs.Args()[1:]) {
			return exitUsage
		}
	}
	if id == "" || fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	list := splitServers(*servers)
	if len(list) == 0 {
		fmt.Fprintln(os.Stderr, "restarea get: --server (or RESTAREA_SERVER) is required")
		return exitUsage
	}
	roots, err := loadCA(*ca)
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea get: %v\n", err)
		return exitUsage
	}
	c, err := client.New(client.Options{Servers: list, Deadline: *timeout, RootCAs: roots})
	if err != nil {
		fmt.Fprintf(os.Stderr, "restarea get: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cons := restarea.ConsistencyLocal
	if *strong {
		cons = restarea.ConsistencyStrong
	}
	thread, err := c.Thread(ctx, id, restarea.ReadOptions{Consistency: cons})
	if err != nil {
		return getFailed(err)
	}
	replies := []restarea.Entry{}
	for page, err := range c.Replies(ctx, thread.ID, restarea.ListOptions{Limit: restarea.MaxPageLimit, Consistency: cons}) {
		if err != nil {
			return getFailed(err)
		}
		replies = append(replies, page.Replies...)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(struct {
			Thread  restarea.Entry   `json:"thread"`
			Replies []restarea.Entry `json:"replies"`
		}{thread, replies}, "", "  ")
		fmt.Printf("%s\n", b)
		return 0
	}
	printThread(os.Stdout, thread, replies)
	return 0
}

// printThread writes the thread as plain text: the question, then each
// reply under a rule, each with its author and link.
func printThread(w io.Writer, q restarea.Entry, replies []restarea.Entry) {
	fmt.Fprintf(w, "%s\n%s\n%s\n\n%s\n", q.Title, byline(q), q.URL, strings.TrimRight(q.Body, "\n"))
	fmt.Fprintf(w, "\n%d %s\n", len(replies), plural(len(replies), "reply", "replies"))
	for i, r := range replies {
		fmt.Fprintf(w, "\n--- reply %d · %s\n%s\n", i+1, byline(r), r.BookmarkURL)
		if r.Title != "" {
			fmt.Fprintf(w, "%s\n", r.Title)
		}
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(r.Body, "\n"))
	}
}

func byline(e restarea.Entry) string {
	who := e.Actor.Name
	if e.Actor.Model != "" {
		who += " (" + e.Actor.Model + ")"
	}
	s := fmt.Sprintf("by %s · %s · %s", who, e.SubmissionMode, e.CreatedAt.UTC().Format(time.RFC3339))
	if e.ByOperator {
		s += " · operator"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func getFailed(err error) int {
	var e *restarea.Error
	if errors.As(err, &e) && e.Code == restarea.CodeNotFound {
		fmt.Fprintf(os.Stderr, "restarea get: not found: %s\n", e.Message)
		return exitFailure
	}
	fmt.Fprintf(os.Stderr, "restarea get: %v\n", err)
	return exitFailure
}
