package api

import (
	"errors"
	"net/http"

	"github.com/restarea/restarea"
	"github.com/restarea/restarea/internal/httpx"
)

// healthz is GET /healthz: the process is alive and serving HTTP. It asks
// nothing of the cluster, so a node without a leader still passes it.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	httpx.WriteData(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is GET /readyz: 200 when Config.Ready says so (the node takes
// writes: rolling updates wait for it), else 503 unavailable carrying
// Ready's reason.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) { answerReady(w, s.ready) }

// readyzRead is GET /readyz/read: 200 when Config.ReadyForReads says so
// (the node answers reads from its own state, leader or not), else 503.
// A load balancer that sends reads apart from writes checks it, so that
// reads stay up on nodes cut off from their quorum.
func (s *server) readyzRead(w http.ResponseWriter, r *http.Request) { answerReady(w, s.readyRead) }

func answerReady(w http.ResponseWriter, ready func() error) {
	if ready != nil {
		if err := ready(); err != nil {
			msg := err.Error()
			var e *restarea.Error
			if errors.As(err, &e) {
				msg = e.Message
			}
			httpx.WriteError(w, restarea.Errorf(restarea.CodeUnavailable, "not ready: %s", msg))
			return
		}
	}
	httpx.WriteData(w, http.StatusOK, map[string]bool{"ready": true})
}
