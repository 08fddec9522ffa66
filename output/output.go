// Package output is the way out of a live link, the twin of tap.Session on
// the way in: built once from a Config (never from flags), it owns where
// findings and frames go — the violation log, the console, an OTLP
// exporter, more sinks (metrics) and a collector for the summary — and the
// capture with its header, and it closes them all within a deadline and
// gives the summary. A command becomes: flags → tap.SessionConfig +
// output.Config; tap.NewSession(…Sink: o.Sink(), Recorder: o.Recorder());
// feed; o.Close(deadline); o.Summary(…).
package output

import (
	"errors"
	"fmt"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	tapmetrics "github.com/ahp-tap/ahp-tap/internal/metrics"
	"github.com/ahp-tap/ahp-tap/otlpexport"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Config says where the findings and frames of one live link go.
type Config struct {
	// Name prefixes the one-line notices ("ahp-tap http: …").
	Name string
	// Diag receives one-line notices; it must never block.
	Diag io.Writer
	// Console, when set, prints each finding as a readable line (the
	// --console view).
	Console io.Writer
	// ConsoleLink, when set, names the link before the connection on each
	// console line: several links share one console (the routes of one
	// `ahp-tap http`). The log and the capture are the link's own and
	// need no name.
	ConsoleLink string
	// Log is the violation log's path ("": none, "-": standard error).
	// With LogBestEffort a log that cannot be opened is said on Diag and
	// skipped (a stdio tap's backend must run whatever happens to its
	// aids); otherwise Open fails.
	Log           string
	LogBestEffort bool
	// Capture is the capture file's path ("": none), Header its header.
	// With CaptureBestEffort a capture that cannot be created is said on
	// Diag and skipped; otherwise Open fails.
	Capture           string
	Header            capture.Header
	CaptureBestEffort bool
	// OTLP, when set, exports every finding (opened by the command from
	// its flags), a span per exchange (Watcher) and, with Metrics, the
	// metrics; Close gives it at most OTLPClose.
	OTLP      *otlpexport.Exporter
	OTLPClose time.Duration
	// Metrics is the registry of the link's Prometheus metrics; with OTLP
	// its ahp_tap_* families are pushed to the collector too.
	Metrics prometheus.Gatherer
	// Sinks are more places every finding goes (metrics).
	Sinks []tap.Sink
	// Traffic, when set, counts the link's findings, exchanges, frames
	// and frames not audited (a stdio audit side's --metrics): it is one
	// more sink, a watcher of the judged frames and a counter in front of
	// the capture.
	Traffic *tapmetrics.Traffic
	// Conduct, when set, carries the link's facts to the registration's
	// live conduct timeline (--conduct): it watches the judged frames, and
	// Close gives it half of what is left of the deadline, at most a
	// second, before anything else.
	Conduct *live.Client
	// Plain, when set, prints each finding as one line, PlainPrefix and
	// the finding's one-line form (a mock peer's stderr); it must be safe
	// for concurrent use with the command's own lines.
	Plain       io.Writer
	PlainPrefix string
	// Redact, when set, is applied to every Plain line (the credentials
	// an httpaudit.Builder learned).
	Redact func(string) string
	// SummaryLimit caps the examples the summary's collector keeps per
	// check (0: no cap; a long-running tap counts only, with 1).
	SummaryLimit int
	// View, when set, is the link's live view (--ui): it gets every
	// finding (Sink), every transport note (through Recorder) and every
	// judged frame with its exchange (through Watch).
	View View
	// Scenarios names the --inject-plan scenarios of the link's faults, in
	// the plan's order: the summary says, per scenario, how many faults
	// were injected, how often the harness re-sent a request a fault hit,
	// and the findings about those requests (nil: no plan).
	Scenarios []string
}

// A View is a live view of a link (viewserve.Hub). Its methods run on the
// audit goroutine and must never block.
type View interface {
	tap.Sink
	tap.Watcher
	Note(tap.Note)
}

// An Output is the open way out of one link.
type Output struct {
	cfg       Config
	collector *report.Collector
	log       *report.Log
	console   *report.Console
	capture   *capture.Writer
	sink      tap.MultiSink
	others    tap.MultiSink // every sink but the exporter
	scenarios *scenarioTally
	closed    bool
}

// MinClose is what closing the log and the capture gets when the deadline
// has already passed.
const MinClose = 100 * time.Millisecond

// Open opens every output of cfg. On an error nothing stays open.
func Open(cfg Config) (*Output, error) {
	if cfg.Diag == nil {
		cfg.Diag = io.Discard
	}
	o := &Output{cfg: cfg, collector: &report.Collector{Limit: cfg.SummaryLimit}}
	o.sink = tap.MultiSink{o.collector}
	o.sink = append(o.sink, cfg.Sinks...)
	if cfg.Traffic != nil {
		o.sink = append(o.sink, cfg.Traffic.Sink())
	}
	if cfg.Plain != nil {
		o.sink = append(o.sink, plainSink(cfg.Plain, cfg.PlainPrefix, cfg.Redact))
	}
	if cfg.Console != nil {
		o.console = report.NewConsole(cfg.Console, report.UseColour(cfg.Console))
		var cs tap.Sink = o.console
		if link := cfg.ConsoleLink; link != "" {
			cs = tap.SinkFunc(func(f tap.Finding) {
				f.Conn = strings.TrimSpace(link + " " + f.Conn)
				o.console.Write(f)
			})
		}
		o.sink = append(o.sink, cs)
	}
	if cfg.Log != "" {
		if cfg.LogBestEffort {
			o.log = report.OpenLogBestEffort(cfg.Log, cfg.Diag)
		} else {
			lg, err := report.OpenLog(cfg.Log, cfg.Diag)
			if err != nil {
				return nil, err
			}
			o.log = lg
		}
		o.sink = append(o.sink, o.log)
	}
	if cfg.View != nil {
		o.sink = append(o.sink, cfg.View)
	}
	if len(cfg.Scenarios) > 0 {
		o.scenarios = newScenarioTally(cfg.Scenarios)
		o.sink = append(o.sink, o.scenarios)
	}
	o.others = o.sink
	if cfg.OTLP != nil {
		o.sink = append(o.sink, cfg.OTLP)
		if cfg.Metrics != nil {
			cfg.OTLP.ExportMetrics(cfg.Metrics)
		}
	}
	if cfg.Capture != "" {
		w, err := capture.Create(cfg.Capture, cfg.Header)
		switch {
		case err != nil && cfg.CaptureBestEffort:
			printable.Fprintf(cfg.Diag, "ahp-tap: cannot open the capture: %v; nothing is captured, traffic is not affected\n", err)
		case err != nil:
			o.log.Close()
			return nil, fmt.Errorf("cannot open capture: %v", err)
		default:
			if n := w.Notice(); n != "" {
				printable.Fprintf(cfg.Diag, "ahp-tap %s: capture: %s\n", cfg.Name, n)
			}
			o.capture = w
		}
	}
	return o, nil
}

// Sink is where every finding of the link goes.
func (o *Output) Sink() tap.Sink { return o.sink }

// Recorder is the capture (nil: none); with Traffic, its counter in front
// of the capture; with a View, the way the notes reach it.
func (o *Output) Recorder() tap.Recorder {
	var rec tap.Recorder
	if o.capture != nil {
		rec = o.capture
	}
	if o.cfg.Traffic != nil {
		rec = o.cfg.Traffic.Recorder(rec)
	}
	if o.scenarios != nil {
		rec = tallyRecorder{next: rec, tally: o.scenarios}
	}
	if o.cfg.View != nil {
		return ViewRecorder(rec, o.cfg.View)
	}
	return rec
}

// ViewRecorder is next (nil: none) with the view's notes.
func ViewRecorder(next tap.Recorder, v View) tap.Recorder {
	return viewRecorder{next: next, view: v}
}

// Watcher is what watches the link's judged frames for the way out (the
// live conduct timeline, the traffic metrics, the OTLP exporter's span per
// exchange, the live view), or nil.
func (o *Output) Watcher() tap.Watcher {
	var c, t, v tap.Watcher
	if o.cfg.Conduct != nil {
		c = o.cfg.Conduct
	}
	if o.cfg.Traffic != nil {
		t = o.cfg.Traffic
	}
	if o.cfg.View != nil {
		v = o.cfg.View
	}
	var sc tap.Watcher
	if o.scenarios != nil {
		sc = o.scenarios
	}
	return Watchers(c, t, o.cfg.OTLP.Watcher(), v, sc)
}

// Watch is Watcher with w (nil: none) first.
func (o *Output) Watch(w tap.Watcher) tap.Watcher { return Watchers(w, o.Watcher()) }

// SessionConfig returns sc with the way out filled in: Sink, Recorder and
// Watch. Build the link's session with tap.NewSession(o.SessionConfig(sc)).
func (o *Output) SessionConfig(sc tap.SessionConfig) tap.SessionConfig {
	sc.Sink, sc.Recorder, sc.Watch = o.Sink(), o.Recorder(), o.Watcher()
	return sc
}

// Levels counts the findings by level so far.
func (o *Output) Levels() report.LevelCounts { return o.collector.Levels() }

// Watchers is one watcher handing each judged frame to every non-nil one
// of ws in turn (nil when there is none).
func Watchers(ws ...tap.Watcher) tap.Watcher {
	var all watchers
	for _, w := range ws {
		if w != nil {
			all = append(all, w)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	var cs []tap.Clocker
	for _, w := range all {
		if c, ok := w.(tap.Clocker); ok {
			cs = append(cs, c)
		}
	}
	if cs != nil {
		// Only then is the whole a Clocker: a feeder wakes to tell a
		// Clocker the time while the link is quiet.
		return clockedWatchers{all, cs}
	}
	return all
}

// clockedWatchers are watchers some of which follow the session's clock.
type clockedWatchers struct {
	watchers
	clockers []tap.Clocker
}

func (ws clockedWatchers) Clock(t time.Time) {
	for _, c := range ws.clockers {
		c.Clock(t)
	}
}

// viewRecorder records to the capture (if any) and hands notes to the view.
type viewRecorder struct {
	next tap.Recorder
	view View
}

func (r viewRecorder) Record(f *tap.Frame) {
	if r.next != nil {
		r.next.Record(f)
	}
}

func (r viewRecorder) RecordNote(n tap.Note) {
	if r.next != nil {
		r.next.RecordNote(n)
	}
	r.view.Note(n)
}

// watchers hands each judged frame to every one in turn.
type watchers []tap.Watcher

func (ws watchers) Judged(f *tap.Frame, x *tap.Exchange) {
	for _, w := range ws {
		w.Judged(f, x)
	}
}

// plainSink prints each finding as prefix and its one-line form.
func plainSink(w io.Writer, prefix string, redact func(string) string) tap.Sink {
	return tap.SinkFunc(func(f tap.Finding) {
		line := f.String()
		if redact != nil {
			line = redact(line)
		}
		printable.Fprintf(w, "%s%s\n", prefix, line)
	})
}

// Close flushes and closes the exporter, the log, the console and the
// capture, giving up at deadline (each still gets MinClose): a sink that
// blocks (stderr not read, a hung mount, a collector that does not answer)
// never holds up the exit. What the exporter could not send is a TAP-1
// finding in the log and the summary. It returns the first error of the
// log or the capture, and is idempotent.
func (o *Output) Close(deadline time.Time) error {
	if o.closed {
		return nil
	}
	o.closed = true
	left := func() time.Duration { return max(time.Until(deadline), MinClose) }
	if o.cfg.Conduct != nil {
		o.cfg.Conduct.Close(max(min(time.Until(deadline)/2, time.Second), time.Millisecond))
	}
	if o.cfg.OTLP != nil {
		d := left()
		if o.cfg.OTLPClose > 0 {
			d = min(d, o.cfg.OTLPClose)
		}
		if f := o.cfg.OTLP.Close(d); f != nil {
			o.others.Write(*f) // what it could not send: TAP-1
		}
	}
	logErr := o.log.CloseWithin(left())
	o.console.Close()
	var capErr error
	if c := o.capture; c != nil {
		// Close waits for a write in progress, so it runs bounded.
		if !within(left(), func() { capErr = errors.Join(c.Err(), c.Close()) }) {
			capErr = nil
			fmt.Fprintf(o.cfg.Diag, "ahp-tap %s: the capture could not be closed in time (a write blocks); it may be incomplete, traffic was not affected\n", o.cfg.Name)
		}
	}
	if logErr != nil {
		return fmt.Errorf("closing the log: %v", logErr)
	}
	if capErr != nil {
		return fmt.Errorf("writing the capture: %v", capErr)
	}
	return nil
}

// Summary is the link's summary: the findings counted, the frames not
// audited, what the session could not check (the catalogue's answer,
// Session.NotChecked), and where the findings went.
func (o *Output) Summary(notAudited uint64, s *tap.Session) *report.Summary {
	sum := o.collector.Summary()
	sum.NotAudited = notAudited
	if s != nil {
		for _, n := range s.NotChecked() {
			sum.NotPossible = append(sum.NotPossible, report.NotPossible{Check: n.Check, Reason: n.Reason})
		}
	}
	if o.scenarios != nil {
		sum.Scenarios = o.scenarios.summary()
	}
	sum.LogDropped = o.log.Dropped()
	sum.FindingsTo = FindingsTo(o.cfg.Log, o.log.Failed(), o.console != nil)
	return sum
}

// FindingsTo says where a live tap's findings went, for its summary.
func FindingsTo(logPath string, logFailed bool, console bool) []string {
	var out []string
	switch {
	case logPath == "-":
		out = append(out, "standard error (--log -, JSON Lines)")
	case logPath != "" && !logFailed:
		out = append(out, "the violation log "+logPath+" (read it with 'ahp-tap tail "+logPath+"')")
	}
	if console {
		out = append(out, "standard error (--console)")
	}
	if len(out) == 0 {
		out = append(out, "nowhere but this summary: give --console, or --log PATH")
	}
	return out
}

// within runs fn and waits up to d for it to return; it reports whether it
// did. fn is left running otherwise.
func within(d time.Duration, fn func()) bool {
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
