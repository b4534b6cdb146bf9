package raftmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// converter exposes the sink's series under the names of the renames
// table, in base units, next to the old names marked deprecated.
type converter struct {
	// source holds the sink alone; it is gathered at each scrape.
	source prometheus.Gatherer
}

// Describe implements prometheus.Collector. It describes nothing: raft
// creates series as it first reports them, so the converter is an
// unchecked collector.
func (c converter) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c converter) Collect(ch chan<- prometheus.Metric) {
	// Gather returns what it could gather along with any error; a series
	// it could not read is left out of this scrape, like any collector's.
	families, _ := c.source.Gather()
	for _, f := range families {
		r, ok := byOld[f.GetName()]
		switch {
		case !ok:
			// A key the table does not know (a newer raft): as the sink
			// reports it.
			emit(ch, f, f.GetName(), f.GetHelp(), 1)
		case r.New == r.Old:
			emit(ch, f, r.Old, r.Help, 1)
		default:
			emit(ch, f, r.Old, r.DeprecatedHelp(), 1)
			if !r.Existing {
				scale := 1.0
				if r.Unit == millis {
					scale = 1.0 / 1000
				}
				emit(ch, f, r.New, r.Help, scale)
			}
		}
	}
}

// emit sends f's series as name with help, values multiplied by scale
// (a summary's count and a counter's increments are counts, never
// scaled: scale applies to measured values, and counters are only
// renamed with scale 1).
func emit(ch chan<- prometheus.Metric, f *dto.MetricFamily, name, help string, scale float64) {
	for _, m := range f.GetMetric() {
		names := make([]string, 0, len(m.GetLabel()))
		values := make([]string, 0, len(m.GetLabel()))
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
			values = append(values, l.GetValue())
		}
		desc := prometheus.NewDesc(name, help, names, nil)
		var (
			out prometheus.Metric
			err error
		)
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			out, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, m.GetCounter().GetValue()*scale, values...)
		case dto.MetricType_GAUGE:
			out, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.GetGauge().GetValue()*scale, values...)
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			q := make(map[float64]float64, len(s.GetQuantile()))
			for _, v := range s.GetQuantile() {
				q[v.GetQuantile()] = v.GetValue() * scale
			}
			out, err = prometheus.NewConstSummary(desc, s.GetSampleCount(), s.GetSampleSum()*scale, q, values...)
		case dto.MetricType_UNTYPED:
			out, err = prometheus.NewConstMetric(desc, prometheus.UntypedValue, m.GetUntyped().GetValue()*scale, values...)
		default:
			// go-metrics' sink makes no histograms.
			continue
		}
		if err == nil {
			ch <- out
		}
	}
}
