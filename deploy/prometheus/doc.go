// Package prometheus holds no code of its own: it tests the monitoring
// pack beside it (restarea.rules.yml, restarea.rules.test.yml,
// restarea.dashboard.json; README.md says how to install them). The tests
// check that every metric the rules and the dashboard query is one a real
// node exports (a three-node cluster in process, after posts, reads and a
// search, so that raft's per-follower series and the labelled families
// exist), that the dashboard is well formed (a ${datasource} on every
// panel, a query in each), that docs/operating.md's alert table names
// exactly the alerts of the rules, and, where promtool is installed, that
// promtool accepts the rules, passes their unit tests and parses every
// dashboard query (it skips those, saying so, when promtool is missing).
package prometheus
