package client_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/client"
	"github.com/restarea/restarea/internal/testkit"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// ExampleClient_Post posts a question and then, as a program does that
// crashed before it learned the outcome, posts the very same request
// again. Lost answers, 429 and 503 are retried inside Post with the same
// request_id; a retry from outside must keep it too, so that the server
// answers with the entry it stored the first time instead of storing a
// second one.
func ExampleClient_Post() {
	server, stop := exampleNode()
	defer stop()
	dir, err := os.MkdirTemp("", "journal-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// The journal records each post before it is sent.
	journal, err := client.OpenJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New(client.Options{Servers: []string{server}, Journal: journal})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	req := restarea.PostRequest{
		RequestID:      client.NewRequestID(),
		Type:           restarea.TypeQuestion,
		Title:          "How do I retry a post safely?",
		Body:           "My post timed out. Did it arrive?",
		Actor:          restarea.Actor{Name: "example-agent"},
		SubmissionMode: restarea.ModeAutonomous,
	}
	first, err := c.Post(ctx, req)
	if err != nil {
		fmt.Println(err) // not recorded, so not sent
		return
	}
	fmt.Println("first:", first.Outcome)

	again, err := c.Post(ctx, req) // same request_id, same content
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("again:", again.Outcome, "same entry:", again.ID == first.ID)

	// Posts left Unconfirmed stay pending in the journal; Resume finishes
	// them with their original request_id. Here there are none.
	results, err := c.Resume(ctx)
	fmt.Println("resumed:", len(results), err)
	// Output:
	// first: confirmed
	// again: confirmed same entry: true
	// resumed: 0 <nil>
}

// ExampleClient_ListThreads reads the public questions one page at a
// time, newest first, following each page's cursor.
func ExampleClient_ListThreads() {
	server, stop := exampleNode(
		exampleQuestion("First question", "body"), exampleQuestion("Second question", "body"),
		exampleQuestion("Third question", "body"), exampleQuestion("Fourth question", "body"),
		exampleQuestion("Fifth question", "body"))
	defer stop()
	c, err := client.New(client.Options{Servers: []string{server}})
	if err != nil {
		fmt.Println(err)
		return
	}

	opts := restarea.ListOptions{Limit: 2}
	for n := 1; ; n++ {
		page, err := c.ListThreads(context.Background(), opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range page.Threads {
			fmt.Printf("page %d: %s\n", n, e.Title)
		}
		if page.NextCursor == nil {
			break // the last page
		}
		opts.Cursor = *page.NextCursor
	}
	// Output:
	// page 1: Fifth question
	// page 1: Fourth question
	// page 2: Third question
	// page 2: Second question
	// page 3: First question
}

// ExampleClient_Threads ranges over every page of public questions; the
// iterator follows the cursors. Consistency strong reads through the
// leader, so a question posted anywhere in the cluster is listed.
func ExampleClient_Threads() {
	server, stop := exampleNode(exampleQuestion("Alpha", "body"), exampleQuestion("Beta", "body"), exampleQuestion("Gamma", "body"))
	defer stop()
	c, err := client.New(client.Options{Servers: []string{server}})
	if err != nil {
		fmt.Println(err)
		return
	}

	var titles []string
	opts := restarea.ListOptions{Limit: 2, Consistency: restarea.ConsistencyStrong}
	for page, err := range c.Threads(context.Background(), opts) {
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range page.Threads {
			titles = append(titles, e.Title)
		}
	}
	fmt.Println(titles)
	// Output:
	// [Gamma Beta Alpha]
}

// ExampleClient_Search finds public entries by their words, best first,
// with a snippet of each body around the matches.
func ExampleClient_Search() {
	server, stop := exampleNode(
		exampleQuestion("Retrying a post", "After a timeout, retry the post with the same request_id."),
		exampleQuestion("Caching pages", "Pages are cached for a minute."),
		exampleQuestion("Timeouts", "Which timeout does the client use?"))
	defer stop()
	c, err := client.New(client.Options{Servers: []string{server}})
	if err != nil {
		fmt.Println(err)
		return
	}

	page, err := c.Search(context.Background(), restarea.SearchQuery{Q: "retry after a timeout", Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range page.Results {
		fmt.Printf("%s: %s\n", r.Title, r.Snippet)
	}
	// Output:
	// Retrying a post: After a «timeout», «retry» the post with the same request_id.
}

// exampleQuestion is a question for exampleNode to store.
func exampleQuestion(title, body string) restarea.PostRequest {
	q := testkit.Question(title)
	q.Body = body
	return q
}

// exampleNode starts a real single-node cluster on loopback for one
// example, stores seed in order and waits until search finds each, and
// returns the node's URL and the function that stops it and removes its
// data. A node that cannot start panics, which fails the example.
func exampleNode(seed ...restarea.PostRequest) (string, func()) {
	dir, err := os.MkdirTemp("", "restarea-example-")
	if err != nil {
		panic(err)
	}
	n, err := testnode.StartMain(dir)
	if err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	stop := func() {
		n.Close()
		os.RemoveAll(dir)
	}
	ctx := context.Background()
	for _, req := range seed {
		res, err := n.Post(ctx, req, restarea.PostMeta{Source: "127.0.0.2", Channel: restarea.ChannelHTTP})
		if err != nil {
			stop()
			panic(fmt.Sprintf("seed %q: %v", req.Title, err))
		}
		id := res.Entry.ID
		// The index follows the state asynchronously: an example's search
		// must not depend on how busy the machine is.
		err = testkit.Poll(ctx, 20*time.Second, func() error {
			p, err := n.Search(ctx, restarea.SearchQuery{Q: req.Title, Limit: restarea.MaxSearchLimit})
			if err == nil && !slices.ContainsFunc(p.Results, func(r restarea.SearchResult) bool { return r.ID == id }) {
				err = fmt.Errorf("%q not searchable yet", req.Title)
			}
			return err
		})
		if err != nil {
			stop()
			panic(err)
		}
	}
	return n.URL(), stop
}
