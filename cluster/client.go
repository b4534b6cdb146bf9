package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/transport"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Client sends signed requests to other nodes: over the internal channel
// (by raft address) and to the public cluster paths (by URL).
type Client struct {
	// Internal reaches a node's internal channel by its raft address
	// (transport.Mux.HTTPClient).
	Internal *http.Client
	// Public reaches nodes' HTTP listeners.
	Public *http.Client
	Secret []byte

	// noBinary holds the raft addresses of leaders that lack
	// pathApplyBatchBin (an older version).
	noBinary sync.Map
}

// Apply forwards cmd to the leader at raftAddr. An error wrapping
// ErrNotApplied means the command was certainly not applied; any other
// error means its outcome is unknown.
func (c *Client) Apply(ctx context.Context, raftAddr string, cmd *fsm.Command) (*fsm.Result, error) {
	var res fsm.Result
	if err := c.call(ctx, c.Internal, "http://"+raftAddr+pathApply, http.MethodPost, cmd, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ReadIndex asks the leader at raftAddr for a confirmed commit index.
func (c *Client) ReadIndex(ctx context.Context, raftAddr string) (uint64, error) {
	var res indexResponse
	err := c.call(ctx, c.Internal, "http://"+raftAddr+pathReadIndex, http.MethodPost, struct{}{}, &res)
	return res.Index, err
}

// PeerAt asks the node at raftAddr to describe itself over the internal
// channel (the leader uses it to learn what its members can read).
func (c *Client) PeerAt(ctx context.Context, raftAddr string) (PeerInfo, error) {
	var p PeerInfo
	err := c.call(ctx, c.Internal, "http://"+raftAddr+pathPeer, http.MethodPost, struct{}{}, &p)
	return p, err
}

// JoinLeader asks the leader at raftAddr to add or update a voter.
func (c *Client) JoinLeader(ctx context.Context, raftAddr string, req JoinRequest) error {
	return c.call(ctx, c.Internal, "http://"+raftAddr+pathJoin, http.MethodPost, req, nil)
}

// RemoveLeader asks the leader at raftAddr to remove server id.
func (c *Client) RemoveLeader(ctx context.Context, raftAddr, id string) error {
	return c.call(ctx, c.Internal, "http://"+raftAddr+pathRemove, http.MethodPost, idRequest{ID: id, Origin: restarea.OriginFrom(ctx)}, nil)
}

// TransferLeader asks the leader at raftAddr to hand leadership to id.
func (c *Client) TransferLeader(ctx context.Context, raftAddr, id string) error {
	return c.call(ctx, c.Internal, "http://"+raftAddr+pathTransfer, http.MethodPost, idRequest{ID: id, Origin: restarea.OriginFrom(ctx)}, nil)
}

// FinalizeLeader asks the leader at raftAddr to finalize an upgrade. A
// leader of a release that predates cluster versions has no such path:
// that answer is a conflict naming it.
func (c *Client) FinalizeLeader(ctx context.Context, raftAddr string) (FinalizeAnswer, error) {
	var ans FinalizeAnswer
	err := c.call(ctx, c.Internal, "http://"+raftAddr+pathFinalize, http.MethodPost, idRequest{Origin: restarea.OriginFrom(ctx)}, &ans)
	if restarea.ErrorCode(err) == restarea.CodeNotFound {
		return ans, restarea.Errorf(restarea.CodeConflict, "the leader at %s runs a release that predates cluster versions (v0.1.0 or earlier): upgrade it first", raftAddr)
	}
	return ans, err
}

// JoinVia sends a join request to the node at baseURL, which routes it to
// the leader. A member of release v0.1.0 decodes the request strictly and
// refuses ClusterVersionMax as an unknown field: the request is then sent
// again without it. Such a member belongs to a cluster at version 1 (a
// finalized cluster refuses v0.1.0 nodes), where the field decides
// nothing.
func (c *Client) JoinVia(ctx context.Context, baseURL string, req JoinRequest) error {
	url := strings.TrimRight(baseURL, "/") + PathJoin
	err := c.call(ctx, c.Public, url, http.MethodPost, req, nil)
	if req.ClusterVersionMax != 0 && refusedField(err, "cluster_version_max") {
		req.ClusterVersionMax = 0
		err = c.call(ctx, c.Public, url, http.MethodPost, req, nil)
	}
	return err
}

// refusedField reports whether err is a strict decoder's refusal of the
// JSON field name (an older node's answer to a field it does not know).
func refusedField(err error, name string) bool {
	return restarea.ErrorCode(err) == restarea.CodeInvalidRequest && strings.Contains(err.Error(), `unknown field "`+name+`"`)
}

// Peer asks the node at baseURL to describe itself.
func (c *Client) Peer(ctx context.Context, baseURL string) (PeerInfo, error) {
	var p PeerInfo
	err := c.call(ctx, c.Public, strings.TrimRight(baseURL, "/")+PathPeer, http.MethodGet, nil, &p)
	return p, err
}

func (c *Client) call(ctx context.Context, hc *http.Client, url, method string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	return c.callRaw(ctx, hc, url, method, body, "application/json", out)
}

// callRaw sends body as it is, signed, and decodes a JSON answer into out.
func (c *Client) callRaw(ctx context.Context, hc *http.Client, url, method string, body []byte, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotApplied, err)
	}
	req.Header.Set("Content-Type", contentType)
	transport.SignRequest(c.Secret, req, body)
	resp, err := hc.Do(req)
	if err != nil {
		if isDialError(err) {
			return fmt.Errorf("%w: %v", ErrNotApplied, err)
		}
		return restarea.Errorf(restarea.CodeUnavailable, "no answer from %s (outcome unknown): %v", req.URL.Host, err).WithRetryAfter(time.Second)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return restarea.Errorf(restarea.CodeUnavailable, "answer from %s cut off (outcome unknown): %v", req.URL.Host, err).WithRetryAfter(time.Second)
	}
	if resp.StatusCode == http.StatusOK {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return restarea.Errorf(restarea.CodeUnavailable, "unreadable answer from %s: %v", req.URL.Host, err).WithRetryAfter(time.Second)
		}
		return nil
	}
	var e struct {
		Error struct {
			Code    restarea.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(data, &e)
	if resp.StatusCode == http.StatusMisdirectedRequest || e.Error.Code == codeNotLeader {
		return fmt.Errorf("%w: %s is not the leader", ErrNotApplied, req.URL.Host)
	}
	if e.Error.Code == "" && resp.StatusCode == http.StatusNotFound {
		// A peer of an older version that lacks the path.
		e.Error.Code = restarea.CodeNotFound
		e.Error.Message = fmt.Sprintf("%s has no %s", req.URL.Host, req.URL.Path)
	}
	if e.Error.Code == "" {
		e.Error.Code = restarea.CodeUnavailable
		e.Error.Message = fmt.Sprintf("%s answered %s", req.URL.Host, resp.Status)
	}
	out2 := restarea.Errorf(e.Error.Code, "%s", e.Error.Message)
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		out2.RetryAfter = time.Duration(ra) * time.Second
	}
	return out2
}

// isDialError reports whether err happened before a request could be
// sent: then the receiver never saw it.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
