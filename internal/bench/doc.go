// Package bench measures a rest.area cluster: new posts over REST and MCP
// at several concurrencies, a replay storm, reads on a follower, growth of
// the store, and the fsync ceiling of the disk it runs on. Every figure is
// also given as a ratio to that ceiling, because one fsync per write is
// what an unbatched write path would cost.
//
// All traffic goes to loopback (or to the URLs given), every load loop is
// bounded in both operations and time, and nothing here asserts a timing:
// targets are evaluated and printed, never enforced.
package bench
