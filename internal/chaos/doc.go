// Package chaos tests a rest.area cluster the way Jepsen and etcd's
// robustness tests do: many workers post and replay concurrently across
// nodes, over REST and MCP mixed, while a seeded schedule kills, pauses
// and partitions nodes. Every call is recorded in a history. After the
// faults are healed and the cluster has settled, a checker reads the
// final state of every node and proves, or refutes, the promises of
// docs/contract.md §2, §3 and §8: no duplicates, no lost acknowledged writes,
// a 409 never changes what is stored, and the whole history is
// linearizable for a map of request_id → entry (checked with porcupine).
//
// Config.Faults chooses the fault classes. ClassMembership (local node
// processes only) changes the members while the workload runs, through
// the operator's paths — the admin API to remove a member, --join to add
// one: a follower removed, wiped and joined again under a new id, the
// leader removed, two nodes added and removed again, a node replaced by
// a fresh one under its id and address. Every run records each node's
// claim to lead, by term, and reports two claimants of one term; after
// membership changes the check adds that every node lists the same
// voters, exactly the ids the nodes run under.
//
// With Config.RollingRestart the random faults give way to rolling
// restarts: each node in turn is stopped with SIGTERM and started again,
// its /readyz awaited before the next, and the check adds that clients
// saw only answers, 503s and timeouts. Every report gives the longest
// write unavailability: the longest time without a successful post.
//
// With Config.Upgrade the random faults give way to a rolling upgrade:
// the nodes start with the previous release's binary and are replaced
// one at a time by the current one (graceful stop, the new binary on the
// same data, /readyz awaited), optionally one is taken back to the old
// binary and up again, and the upgrade finalized through the admin API;
// a last round of the workload replays request_ids stored earlier. The
// checks of a rolling restart apply, and the upgrade must complete.
//
// The same run drives four kinds of Target: an in-process cluster (for
// go test), local node processes (restarea chaos --local N), the docker
// compose cluster (--compose) and any cluster given by URL (--nodes).
package chaos
