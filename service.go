package restarea

import (
	"context"
	"io"
)

// Consistency selects how a read is served.
type Consistency string

// Read consistency levels (docs/contract.md §3).
const (
	// ConsistencyLocal reads the node's applied state (the default).
	ConsistencyLocal Consistency = ""
	// ConsistencyStrong reads through the leader after it confirms its
	// leadership: linearizable.
	ConsistencyStrong Consistency = "strong"
	// ConsistencyStale reads the node's applied state at once, waiting
	// for nothing: it answers on a node cut off from its cluster (no
	// leader, no quorum), and may lack writes acknowledged elsewhere, or
	// even through this node, that it has not applied yet.
	ConsistencyStale Consistency = "stale"
)

// ParseConsistency accepts "", "local", "default", "strong" and "stale".
func ParseConsistency(s string) (Consistency, error) {
	switch s {
	case "", "local", "default":
		return ConsistencyLocal, nil
	case "strong":
		return ConsistencyStrong, nil
	case "stale":
		return ConsistencyStale, nil
	}
	return "", Errorf(CodeInvalidRequest, "consistency must be strong, stale or omitted")
}

// Page sizes of list reads.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
	// MaxPageBytes bounds the entry text (Entry.TextBytes) one page of a
	// list read carries, whatever its limit: a page that reaches it ends
	// early with a NextCursor that continues right after its last entry.
	// A page always holds at least one entry, so paging progresses. At
	// 1 MiB a page of the largest entries (about 81 KB each) holds 12, and
	// its JSON is at most about 6 MiB (every character escaped as \u003c).
	MaxPageBytes = 1 << 20
)

// PostMeta is what the receiving node knows about a post besides its
// content.
type PostMeta struct {
	// Source is the client address (after the trusted-proxy rule); the
	// per-source limit counts by it.
	Source string
	// Channel is the path the request came by.
	Channel Channel
	// AttemptID identifies one client request across the node's own
	// internal retries; empty means the service assigns one.
	AttemptID string
}

// PostResult is the answer to a post that was decided by the state
// machine: 201 when Replayed is false, 200 when true.
type PostResult struct {
	Entry    Entry
	Replayed bool
}

// ReadOptions are the options of a single-entry read.
type ReadOptions struct {
	Consistency Consistency
}

// ListOptions are the options of a paged read. Limit 0 means the default;
// a Limit above MaxPageLimit is an invalid request.
type ListOptions struct {
	Cursor      string
	Limit       int
	Consistency Consistency
	// NewestFirst lists a thread's replies newest first (ListReplies
	// only: the other lists are newest first already), for the pages'
	// feeds, which show the newest replies and so read only those. A
	// cursor continues in the order of the page that gave it. The REST
	// API and MCP list replies oldest first: their adapters build their
	// options field by field and never set it.
	NewestFirst bool
}

// ThreadPage is one page of public questions, newest first. NextCursor is
// nil on the last page.
type ThreadPage struct {
	Threads    []Entry `json:"threads"`
	NextCursor *string `json:"next_cursor"`
}

// ReplyPage is one page of a thread's public replies, oldest first
// (newest first when ListOptions.NewestFirst asked). NextCursor is nil on
// the last page.
type ReplyPage struct {
	Replies    []Entry `json:"replies"`
	NextCursor *string `json:"next_cursor"`
}

// EntryPage is one page of all entries (hidden ones included), newest
// first, for operators.
type EntryPage struct {
	Entries    []Entry `json:"entries"`
	NextCursor *string `json:"next_cursor"`
}

// Service is what the REST and MCP adapters (and the HTML pages) call. It
// is implemented by a running node; errors are *Error values whose Code
// decides the status.
type Service interface {
	// Post validates req (400 before any state is touched) and decides it
	// in the replicated state machine (docs/contract.md §2).
	Post(ctx context.Context, req PostRequest, meta PostMeta) (PostResult, error)
	// ListThreads returns public questions, newest first.
	ListThreads(ctx context.Context, opts ListOptions) (ThreadPage, error)
	// GetThread returns a public question, or CodeNotFound.
	GetThread(ctx context.Context, id string, opts ReadOptions) (Entry, error)
	// ListReplies returns the public replies of a public question, oldest
	// first (newest first with opts.NewestFirst), or CodeNotFound when the
	// question is not public.
	ListReplies(ctx context.Context, threadID string, opts ListOptions) (ReplyPage, error)
	// GetReply returns a public reply whose question is public, or
	// CodeNotFound.
	GetReply(ctx context.Context, id string, opts ReadOptions) (Entry, error)
	// FindPosts returns the public entries whose body is exactly q.Body,
	// newest first (find_my_post: FindQuery). It validates q (400 naming
	// the field) and answers CodeUnavailable until the cluster runs the
	// cluster version that indexes every entry by its body.
	FindPosts(ctx context.Context, q FindQuery) (FindPage, error)
}

// AdminService is the operators' side (docs/contract.md §5). Every change goes
// through the replicated log.
type AdminService interface {
	// HideEntry marks an entry not visible; hiding a hidden entry is a no-op.
	HideEntry(ctx context.Context, id string) (Entry, error)
	// UnhideEntry makes a hidden entry visible again.
	UnhideEntry(ctx context.Context, id string) (Entry, error)
	// DeleteEntry erases an entry's text and keeps a tombstone for its
	// request_id. Deleting a deleted entry is a no-op; an unknown id is
	// CodeNotFound.
	DeleteEntry(ctx context.Context, id string) error
	// ListEntries returns every stored entry, hidden ones included, with
	// its request_id, newest first.
	ListEntries(ctx context.Context, opts ListOptions) (EntryPage, error)
	// Settings returns the settings in force.
	Settings(ctx context.Context) (Settings, error)
	// UpdateSettings applies a patch and returns the settings in force.
	UpdateSettings(ctx context.Context, patch SettingsPatch) (Settings, error)
	// OperatorPost posts a question as the operator (by_operator: true),
	// with the same request_id replay rules as Post; the per-source and
	// global limits and writes_disabled do not apply to it.
	OperatorPost(ctx context.Context, req PostRequest, meta PostMeta) (PostResult, error)
	// ListAudit returns the audit trail of operator actions, newest
	// first; Limit is 1–200 (0: 50) and Cursor is a previous page's
	// NextCursor.
	ListAudit(ctx context.Context, opts ListOptions) (AuditPage, error)
}

// Member is one server of the cluster.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	URL      string `json:"url"`
	Suffrage string `json:"suffrage"`
	// Version is the member's release, as it told the node answering (""
	// when unknown: it did not answer, or runs v0.1.0, which does not say).
	Version string `json:"version"`
	// ClusterVersionMax is the newest cluster version the member knows (0
	// when unknown; 1 for a release that predates cluster versions).
	ClusterVersionMax int `json:"cluster_version_max"`
}

// ClusterStatus is a node's view of the cluster (GET /api/v1/cluster).
type ClusterStatus struct {
	NodeID       string `json:"node_id"`
	Version      string `json:"version"` // the build this node runs (its peers may run another)
	Commit       string `json:"commit"`  // the commit it was built from
	State        string `json:"state"`
	LeaderID     string `json:"leader_id"`
	LeaderURL    string `json:"leader_url"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	// LogFormat is the format leaders write the log in: 2 once every
	// member reads it (a node that cannot is then refused when it joins).
	LogFormat int `json:"log_format"`
	// ClusterVersion is the cluster version in force (1 until an operator
	// finalizes an upgrade: see docs/upgrades.md); ClusterVersionMax is
	// the newest this node's binary knows.
	ClusterVersion    int `json:"cluster_version"`
	ClusterVersionMax int `json:"cluster_version_max"`
	// Lineage is the lineage of the node's data: "0" until the cluster is
	// recovered from a lost majority (docs/disasters.md), then the id
	// restarea recover drew. Every member shows the same one.
	Lineage string   `json:"lineage"`
	Members []Member `json:"members"`
	// Clock is this node's clock against the cluster's time.
	Clock *ClockStatus `json:"clock,omitempty"`
}

// ClockStatus is a node's wall clock compared with the cluster time it
// measures (the replicated clock carried forward by its monotonic clock).
type ClockStatus struct {
	// Known is false until the node has seen the replicated clock advance
	// since it started; until then the skew is not measured.
	Known bool `json:"known"`
	// Agrees is false while the wall clock is off the cluster's time by
	// more than the tolerance: as leader the node then stamps the cluster
	// time, not its clock, and hands leadership over.
	Agrees bool `json:"agrees"`
	// SkewSeconds is the wall clock minus the cluster time.
	SkewSeconds      float64 `json:"skew_seconds"`
	ToleranceSeconds float64 `json:"tolerance_seconds"`
	// ClusterTime is the cluster time this node measures (RFC 3339).
	ClusterTime string `json:"cluster_time,omitempty"`
}

// ClusterService is the cluster's side of the API: status for everyone,
// membership and backups for operators.
type ClusterService interface {
	// ClusterStatus describes the cluster as this node sees it.
	ClusterStatus(ctx context.Context) (ClusterStatus, error)
	// RemoveMember removes a server from the cluster (through the leader).
	RemoveMember(ctx context.Context, id string) error
	// TransferLeadership hands leadership to id, or to any other voter when
	// id is empty.
	TransferLeadership(ctx context.Context, id string) error
	// WriteBackup streams a consistent snapshot of the state to w.
	WriteBackup(ctx context.Context, w io.Writer) (int64, error)
	// FinalizeUpgrade raises the cluster version, through the leader, to
	// the newest every member knows; a member that is behind makes it a
	// conflict naming it (docs/upgrades.md).
	FinalizeUpgrade(ctx context.Context) (UpgradeResult, error)
}

// UpgradeResult is the answer to a finalize-upgrade: the cluster version
// before and after, what happened in words, and the cluster status of the
// node that answered, afterwards.
type UpgradeResult struct {
	// Changed is false when the cluster already ran the newest version
	// every member knows.
	Changed bool          `json:"changed"`
	From    int           `json:"from"`
	To      int           `json:"to"`
	Message string        `json:"message"`
	Status  ClusterStatus `json:"status"`
}
