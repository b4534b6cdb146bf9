package node

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A heartbeat must reach raft's main loop (Consumer), never a handler on
// the transport's goroutine (hashicorp/raft#695, rafttransport.go). The
// bare network transport is the control: it takes the fast path.
func TestHeartbeatsReachTheMainLoop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wrap      func(*raft.NetworkTransport) raft.Transport
		wantWhere string
	}{
		{"bare network transport", func(n *raft.NetworkTransport) raft.Transport { return n }, "handler"},
		{"raftTransport", func(n *raft.NetworkTransport) raft.Transport { return raftTransport{NetworkTransport: n} }, "consumer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer recv.Close()
			send, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer send.Close()

			tr := tc.wrap(recv)
			handled := make(chan struct{}, 1)
			tr.SetHeartbeatHandler(func(rpc raft.RPC) {
				handled <- struct{}{}
				rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
			})
			done := make(chan error, 1)
			go func() {
				// A heartbeat as raft's leader sends it: a term and a leader,
				// no entries, no previous entry, no commit index.
				req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("n2"), Addr: []byte(send.LocalAddr())}, Term: 7}
				var resp raft.AppendEntriesResponse
				done <- send.AppendEntries("n1", recv.LocalAddr(), req, &resp)
			}()
			where := ""
			select {
			case <-handled:
				where = "handler"
			case rpc := <-tr.Consumer():
				where = "consumer"
				rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
			case <-time.After(30 * time.Second):
				t.Fatal("the heartbeat arrived nowhere")
			}
			if where != tc.wantWhere {
				t.Fatalf("the heartbeat reached the %s, want the %s", where, tc.wantWhere)
			}
			if err := <-done; err != nil {
				t.Fatalf("heartbeat RPC: %v", err)
			}
		})
	}
}
