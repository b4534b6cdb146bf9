package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// pageLimit is the page size of the read figures (the API's default).
const pageLimit = 50

// ReadFigure is read throughput on one node.
type ReadFigure struct {
	Node        string `json:"node"`
	Role        string `json:"role"`
	GetThread   Stats  `json:"get_thread"`
	ListReplies Stats  `json:"list_replies"`
}

// PagingFigure compares the first and the last page of a long thread.
type PagingFigure struct {
	ThreadReplies int   `json:"thread_replies"`
	StoredEntries int   `json:"stored_entries"`
	K             int   `json:"k"`
	Page1         Stats `json:"page_1"`
	PageK         Stats `json:"page_k"`
}

// reads measures get_thread and the first page of list_replies on url.
func reads(ctx context.Context, cl *Client, url, thread string, l Load) (ReadFigure, error) {
	fig := ReadFigure{Node: url}
	fig.GetThread = Drive(ctx, l, func(ctx context.Context, c, i int) error {
		status, b, err := cl.Get(ctx, url, "/api/v1/threads/"+thread, c)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("get_thread: HTTP %d: %.200s", status, b)
		}
		return err
	})
	fig.ListReplies = Drive(ctx, l, func(ctx context.Context, c, i int) error {
		n, _, err := cl.ReplyPage(ctx, url, thread, "", pageLimit, c)
		if err == nil && n == 0 {
			err = fmt.Errorf("list_replies: empty first page")
		}
		return err
	})
	return fig, nil
}

// paging walks thread's replies on url to its last page k, then measures
// page 1 and page k under the same load.
func paging(ctx context.Context, cl *Client, url, thread string, l Load, logf func(string, ...any)) (PagingFigure, error) {
	var fig PagingFigure
	cursor, k, total := "", 1, 0
	deadline := time.Now().Add(5 * time.Minute)
	for {
		n, next, err := cl.ReplyPage(ctx, url, thread, cursor, pageLimit, 0)
		if err != nil {
			return fig, err
		}
		total += n
		if next == "" {
			break
		}
		if time.Now().After(deadline) || k > 1_000_000 {
			return fig, fmt.Errorf("paging: walked %d pages without reaching the end", k)
		}
		cursor = next
		k++
		if k%500 == 0 {
			logf("  walked %d pages (%d replies)", k, total)
		}
	}
	fig.ThreadReplies, fig.K = total, k
	fig.Page1 = Drive(ctx, l, func(ctx context.Context, c, i int) error {
		_, _, err := cl.ReplyPage(ctx, url, thread, "", pageLimit, c)
		return err
	})
	fig.PageK = Drive(ctx, l, func(ctx context.Context, c, i int) error {
		n, _, err := cl.ReplyPage(ctx, url, thread, cursor, pageLimit, c)
		if err == nil && n == 0 {
			err = fmt.Errorf("page %d is empty", k)
		}
		return err
	})
	return fig, nil
}
