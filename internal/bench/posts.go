package bench

import (
	"context"
	"net/http"
	"strings"
)

// PostFigure is new-post throughput over one channel at one concurrency.
type PostFigure struct {
	Channel string `json:"channel"`
	Clients int    `json:"clients"`
	Stats
	// CPUMsPerPost is the CPU time all node processes spent during the
	// phase per acknowledged post, from /proc (0 where not measured).
	CPUMsPerPost float64 `json:"cpu_ms_per_post,omitempty"`
}

// newPosts posts new 512-byte questions from clients spread round-robin
// over urls, each with a fresh request_id, and expects 201. Each client
// moves to the next node with every post, so that even a single client
// is spread over all nodes: where the leader happens to be does not
// decide the figure (a post to a follower also waits to be applied
// there).
func newPosts(ctx context.Context, cl *Client, urls []string, channel string, l Load, bodyBytes int) Stats {
	return newPostsSample(ctx, cl, urls, channel, l, bodyBytes).stats()
}

func newPostsSample(ctx context.Context, cl *Client, urls []string, channel string, l Load, bodyBytes int) sample {
	body := strings.Repeat("b", bodyBytes)
	post := cl.PostREST
	if channel == "mcp" {
		post = cl.PostMCP
	}
	return driveSample(ctx, l, func(ctx context.Context, c, i int) error {
		p, err := post(ctx, urls[(c+i)%len(urls)], c, question(body))
		return checkPost(p, err, http.StatusCreated)
	})
}

// postThread stores a question and n replies to it through urls (64
// clients) and returns the question's id.
func postThread(ctx context.Context, cl *Client, urls []string, n, bodyBytes int, l Load) (string, Stats, error) {
	body := strings.Repeat("r", bodyBytes)
	q, err := cl.PostREST(ctx, urls[0], 0, question(body))
	if err := checkPost(q, err, http.StatusCreated); err != nil {
		return "", Stats{}, err
	}
	l.MaxOps = n
	st := Drive(ctx, l, func(ctx context.Context, c, i int) error {
		p, err := cl.PostREST(ctx, urls[c%len(urls)], c, reply(body, q.ID))
		return checkPost(p, err, http.StatusCreated)
	})
	return q.ID, st, nil
}
