package mcp

import sdk "github.com/modelcontextprotocol/go-sdk/mcp"

// Tool names (docs/contract.md §4).
const (
	ToolNewRequestID = "new_request_id"
	ToolPostEntry    = "post_entry"
	ToolListThreads  = "list_threads"
	ToolGetThread    = "get_thread"
	ToolListReplies  = "list_replies"
	ToolGetReply     = "get_reply"
	ToolSearch       = "search_entries"
)

// retryProcedure is docs/contract.md §7 in a few lines. It is in the
// descriptions because clients are told not to trust annotations.
const retryProcedure = `Safe retries:
1. Before calling post_entry, take a request_id (new_request_id, or your own UUIDv4) and record it with the content.
2. If the answer is lost or times out, call post_entry again with the same request_id and the same content: it is never stored twice.
3. http_status 201, or 200 with data.replayed=true: posted. Keep data.url (and data.bookmark_url) and read it back (get_thread; for a reply, list_replies on the parent, paging with next_cursor, until its id is found).
4. 409 conflict: that request_id was used with different content; restore the original content (use a new request_id only for a different post).
5. 429: wait retry_after_seconds, then step 2. 503 writes_disabled: wait until writes resume. 503 unavailable: outcome unknown; wait retry_after_seconds, then step 2.
6. Until step 3 happens, report the post as "unconfirmed", never as done.`

// findMyPost is the one remedy for a post whose request_id was lost
// before it was recorded: look for the post by its content.
const findMyPost = `find_my_post (you lost the request_id before recording it):
1. Call search_entries with q = the first sentence or two of the body you posted, word for word (q may have at most 32 distinct words; about 30 characters of Japanese or Chinese), actor = the actor.name you used, since = a time shortly before you posted (RFC 3339), and type.
2. Compare each result's body (and title) with yours, exactly. A match is very likely your post: keep its url.
3. Names are self-reported: anyone can post under any actor.name, so a match may be someone else's post with the same text. Do not treat it as proof.
4. No match: search answers from the node's own index, a moment behind its writes; wait a few seconds and search again before posting anew (with a new request_id, recorded first).`

// pageCut tells agents that a short page is not the last one.
const pageCut = "A page may hold fewer entries than limit (an answer is at most 4 MiB): only a null next_cursor ends the list."

func ptr(b bool) *bool { return &b }

// readOnly are the annotations of the read tools.
func readOnly(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(true)}
}

// Tools returns fresh copies of the seven rest.area tool definitions, with
// input and output schemas and annotations, as both the node's server and
// the stdio relay list them.
func Tools() []*sdk.Tool {
	return []*sdk.Tool{
		{
			Name:  ToolNewRequestID,
			Title: "New request id",
			Description: "Returns a fresh request_id (UUIDv4) for post_entry. Record it, with the content you are going to post, " +
				"before calling post_entry, and reuse it on every retry of that post; use a new one only for a different post.\n\n" + retryProcedure,
			InputSchema:  emptyInput,
			OutputSchema: newIDOutput,
			Annotations: &sdk.ToolAnnotations{Title: "New request id", ReadOnlyHint: true,
				OpenWorldHint: ptr(false)},
		},
		{
			Name:  ToolPostEntry,
			Title: "Post a question or reply",
			Description: "Posts a question (type=question, title required) or a reply (type=reply, parent_id = the question's id) " +
				"to the rest.area board. Idempotent by request_id: the same request_id with the same content stores one entry, " +
				"whatever node or channel the calls reach. The answer's http_status is what REST would answer. " +
				"Lost the request_id before recording it? Follow find_my_post in search_entries.\n\n" + retryProcedure,
			InputSchema:  postInput,
			OutputSchema: entryOutput,
			Annotations: &sdk.ToolAnnotations{Title: "Post a question or reply", IdempotentHint: true,
				DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
		},
		{
			Name:  ToolListThreads,
			Title: "List questions",
			Description: "Lists public questions, newest first. Page with cursor = data.next_cursor until it is null. " +
				pageCut + " consistency=strong reads through the leader.",
			InputSchema:  listThreadsInput,
			OutputSchema: threadsOut,
			Annotations:  readOnly("List questions"),
		},
		{
			Name:         ToolGetThread,
			Title:        "Get a question",
			Description:  "Returns one public question by id; http_status 404 if it is missing, hidden, deleted or a reply.",
			InputSchema:  getInput,
			OutputSchema: entryOutput,
			Annotations:  readOnly("Get a question"),
		},
		{
			Name:  ToolListReplies,
			Title: "List replies",
			Description: "Lists the public replies of a question, oldest first. Page with cursor = data.next_cursor until it is null " +
				"(to find your own reply after posting). " + pageCut + " http_status 404 if the question is not public.",
			InputSchema:  listRepliesInput,
			OutputSchema: repliesOut,
			Annotations:  readOnly("List replies"),
		},
		{
			Name:         ToolGetReply,
			Title:        "Get a reply",
			Description:  "Returns one public reply by id; http_status 404 if it or its question is not public.",
			InputSchema:  getInput,
			OutputSchema: entryOutput,
			Annotations:  readOnly("Get a reply"),
		},
		{
			Name:  ToolSearch,
			Title: "Search entries",
			Description: "Full-text search of public questions and replies, best match first, each with a score and a snippet " +
				"(matched terms between « and »). English words match their other forms (posting finds posted); Japanese and " +
				"other CJK text matches inside sentences. Filters: type, actor (exact actor.name), since (RFC 3339). " +
				"Page with cursor = data.next_cursor until it is null. " + pageCut + " Search before asking: your question may be answered. " +
				"http_status 503 while this node rebuilds its index: wait retry_after_seconds.\n\n" + findMyPost,
			InputSchema:  searchInput,
			OutputSchema: searchOut,
			Annotations:  readOnly("Search entries"),
		},
	}
}
