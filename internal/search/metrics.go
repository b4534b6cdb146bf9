package search

import (
	"io/fs"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of one index. With no Registerer they are kept but not served.
type metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector

	indexed prometheus.Counter
	removed prometheus.Counter
	delay   prometheus.Histogram
	query   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, x *Index) *metrics {
	m := &metrics{
		reg: reg,
		indexed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_search_indexed_total", Help: "Entries added to this node's search index.",
		}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "restarea_search_removed_total", Help: "Documents of deleted or expired entries removed from the search index.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "restarea_search_index_delay_seconds",
			Help:    "Time from an applied batch to its entries being searchable on this node (the indexing lag).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}),
		query: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "restarea_search_query_seconds",
			Help:    "Latency of search queries on this node.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}),
	}
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "restarea_search_index_lag_entries",
		Help: "Applied log index minus the search index's watermark (0: the index has caught up).",
	}, func() float64 {
		a, w := x.cfg.State.AppliedIndex(), x.watermark.Load()
		if a < w {
			return 0
		}
		return float64(a - w)
	})
	rebuilding := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "restarea_search_rebuilding",
		Help: "1 while the search index is being rebuilt from the state (queries answer 503).",
	}, func() float64 {
		if x.Rebuilding() {
			return 1
		}
		return 0
	})
	docs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "restarea_search_index_documents", Help: "Documents in the search index (hidden entries included).",
	}, func() float64 {
		n, _ := x.docCount()
		return float64(n)
	})
	size := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "restarea_search_index_bytes", Help: "Size of the search index on disk.",
	}, func() float64 { return float64(dirSize(x.path)) })
	m.collectors = []prometheus.Collector{m.indexed, m.removed, m.delay, m.query, lag, rebuilding, docs, size}
	if reg != nil {
		for _, c := range m.collectors {
			reg.MustRegister(c)
		}
	}
	return m
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}

// dirSize is the total size of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
