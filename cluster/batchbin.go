package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/fsm"
	"github.com/restarea/restarea/internal/httpx"
)

// pathApplyBatchBin carries a batch of forwarded commands in the log's own
// binary form (fsm.Command.EncodeV2) instead of JSON: the follower encodes
// and the leader decodes every forwarded post, and the binary form costs a
// fraction of JSON's time and bytes. The answer stays JSON (batchResponse).
// A leader of an older version answers 404, and the sender uses
// pathApplyBatch with that leader from then on.
const pathApplyBatchBin = "/internal/v1/apply-batch-bin"

// encodeBatch writes cmds as a uvarint count, then each command as a
// uvarint length and its EncodeV2 bytes.
func encodeBatch(cmds []*fsm.Command) ([]byte, error) {
	b := binary.AppendUvarint(make([]byte, 0, 512*len(cmds)), uint64(len(cmds)))
	for _, c := range cmds {
		if c == nil {
			return nil, errors.New("cluster: empty command in a batch")
		}
		e, err := c.EncodeV2()
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	return b, nil
}

// decodeBatch parses what encodeBatch wrote. Anything else — a count over
// MaxBatch, a length past the end, trailing bytes, a command DecodeCommand
// refuses — is an error, never a panic.
func decodeBatch(b []byte) ([]*fsm.Command, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > MaxBatch {
		return nil, fmt.Errorf("malformed batch (at most %d commands)", MaxBatch)
	}
	b = b[k:]
	cmds := make([]*fsm.Command, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("malformed batch: command %d cut off", i)
		}
		c, err := fsm.DecodeCommand(b[k : k+int(l)])
		if err != nil {
			return nil, fmt.Errorf("malformed batch: command %d: %v", i, err)
		}
		cmds = append(cmds, c)
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return nil, errors.New("malformed batch: trailing bytes")
	}
	return cmds, nil
}

// serveApplyBatchBin is serveApplyBatch for a binary body.
func serveApplyBatchBin(b Backend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var cmds []*fsm.Command
		if err == nil {
			cmds, err = decodeBatch(body)
		}
		if err != nil {
			httpx.WriteError(w, restarea.Errorf(restarea.CodeInvalidRequest, "%v", err))
			return
		}
		httpx.WriteJSON(w, http.StatusOK, batchResponse{Items: applyAll(r, b, cmds)})
	}
}
