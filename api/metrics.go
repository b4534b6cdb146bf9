package api

import (
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the HTTP metrics of the REST API. Labels are route patterns
// and status codes, never raw paths, so their number stays bounded.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	authFailures  prometheus.Counter
	authThrottled prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	return &metrics{
		requests: register(reg, log, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "restarea_http_requests_total",
			Help: "REST API requests answered, by route pattern and status code.",
		}, []string{"route", "code"})),
		duration: register(reg, log, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "restarea_http_request_duration_seconds",
			Help:    "Time to answer a REST API request, by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"})),
		authFailures: register(reg, log, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_admin_auth_failures_total",
			Help: "Admin bearer tokens that were compared and wrong.",
		})),
		authThrottled: register(reg, log, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_admin_auth_throttled_total",
			Help: "Admin requests refused 429 because their source spent its failed authentications.",
		})),
	}
}

// register registers c, or returns the collector already registered under
// the same description, so that building the handler twice on one registry
// (a restarted listener, tests) shares the series instead of panicking. On
// any other error c still counts, unexported, and the error is logged.
func register[C prometheus.Collector](reg prometheus.Registerer, log *slog.Logger, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	log.Error("api: registering metric", "err", err)
	return c
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}
