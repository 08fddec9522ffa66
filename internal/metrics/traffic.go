package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// Traffic counts what the sessions of a stdio tap's audit side saw: one
// Traffic serves every link of a shared audit process. It is a
// tap.Watcher (exchanges, latency) and wraps each session's recorder
// (frames, bytes, frames not audited); both run on the audit goroutines,
// never on forwarding. Safe for concurrent use.
type Traffic struct {
	*Base
	exchanges *prometheus.CounterVec   // by method, event and outcome
	latency   *prometheus.HistogramVec // by method
	frames    *prometheus.CounterVec   // audited, by direction
	bytes     *prometheus.CounterVec   // audited frames' wire bytes, by direction
	dropped   prometheus.Counter       // frames forwarded but not audited
}

// outcomes are the outcome labels of ahp_tap_exchanges_total.
var outcomes = []string{tap.OutcomeNoEffect, tap.OutcomeDeny, tap.OutcomeEffects, tap.OutcomeFailure,
	tap.OutcomeUnanswered, tap.OutcomeAbandoned, tap.OutcomeLate, tap.OutcomeInvalid,
	tap.OutcomeErrorAnswer, tap.OutcomeNotAudited}

var eventNames = func() []string {
	out := make([]string, 0, len(vocab.Events))
	for _, e := range vocab.Events {
		out = append(out, e.Name)
	}
	return out
}()

// NewTraffic builds the base metrics and the traffic families.
func NewTraffic() *Traffic {
	t := &Traffic{
		Base: NewBase(),
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_exchanges_total",
			Help: "Exchanges answered (a response matched a request), by JSON-RPC method, event type and outcome; unknown values are \"other\", no event \"none\".",
		}, []string{"method", "event", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ahp_tap_exchange_latency_seconds",
			Help:    "Time from the request frame to its answer, as the tap read them, by JSON-RPC method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method"}),
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_frames_audited_total",
			Help: "Frames the audit took, by direction (harness: harness to backend; backend: backend to harness).",
		}, []string{"direction"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ahp_tap_audited_bytes_total",
			Help: "Bytes of the frames the audit took (line terminators not counted), by direction.",
		}, []string{"direction"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ahp_tap_audit_dropped_total",
			Help: "Frames forwarded but not audited because the audit had no room for them (reported as TAP-1).",
		}),
	}
	t.Register(t.exchanges, t.latency, t.frames, t.bytes, t.dropped)
	for _, d := range []string{"harness", "backend"} {
		t.frames.WithLabelValues(d)
		t.bytes.WithLabelValues(d)
	}
	return t
}

func direction(d tap.Direction) string {
	switch d {
	case tap.FromHarness:
		return "harness"
	case tap.FromBackend:
		return "backend"
	}
	return "other"
}

// Judged counts an exchange when f is the answer that matched it
// (tap.Watcher: x is the request's exchange, its outcome final).
func (t *Traffic) Judged(f *tap.Frame, x *tap.Exchange) {
	if _, ok := f.Msg.(*tap.Response); t == nil || x == nil || !ok || x.Request == f {
		return
	}
	method := Bounded(x.Method, vocab.Methods)
	event := "none"
	if name, ok := x.Event.Get("type").Text(); ok {
		event = Bounded(name, eventNames)
	}
	t.exchanges.WithLabelValues(method, event, Bounded(x.Outcome, outcomes)).Inc()
	if q := x.Request; q != nil && !q.Time.IsZero() && !f.Time.IsZero() && !f.Time.Before(q.Time) {
		t.latency.WithLabelValues(method).Observe(f.Time.Sub(q.Time).Seconds())
	}
}

// Recorder returns a recorder that counts frames, bytes and frames not
// audited, then hands each to inner (a capture; may be nil).
func (t *Traffic) Recorder(inner tap.Recorder) tap.Recorder {
	if t == nil {
		return inner
	}
	return &counting{t: t, inner: inner}
}

type counting struct {
	t     *Traffic
	inner tap.Recorder
}

func (c *counting) Record(f *tap.Frame) {
	d := direction(f.Dir)
	c.t.frames.WithLabelValues(d).Inc()
	c.t.bytes.WithLabelValues(d).Add(float64(max(f.Size, len(f.Raw))))
	if c.inner != nil {
		c.inner.Record(f)
	}
}

func (c *counting) RecordNote(n tap.Note) {
	if n.Kind == tap.NoteDropped {
		c.t.dropped.Add(float64(n.Count))
	}
	if c.inner != nil {
		c.inner.RecordNote(n)
	}
}
