package cluster_test

import (
	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
)

// forgedPost is what an outsider would send to spoof a source address.
func forgedPost(req restarea.PostRequest) *fsm.Command {
	return &fsm.Command{Op: fsm.OpPost, Post: &fsm.PostCommand{
		Request: req, Source: "198.51.100.1", Channel: restarea.ChannelHTTP, AttemptID: "x",
	}}
}
