package node_test

import (
	"context"
	"testing"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/testkit/testnode"
)

// A single node has nobody to hand leadership to: that is a refusal no
// retry can change (409 conflict, `restarea admin` exit 1), not 503.
func TestTransferLeadershipAloneIsRefused(t *testing.T) {
	n := testnode.Start(t)
	err := n.TransferLeadership(context.Background(), "")
	if restarea.ErrorCode(err) != restarea.CodeConflict {
		t.Fatalf("transfer on a single node: %v, want conflict", err)
	}
	if !n.IsLeader() {
		t.Fatal("the node is no longer leader")
	}
	if err := n.TransferLeadership(context.Background(), n.ID()); err != nil {
		t.Fatalf("transfer to itself: %v, want nothing to do", err)
	}
}
