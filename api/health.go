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

// readyz is GET /readyz: 200 when Config.Ready says so, else 503
// unavailable carrying Ready's reason.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.ready != nil {
		if err := s.ready(); err != nil {
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
