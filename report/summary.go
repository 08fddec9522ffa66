package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A Summary is the short end-of-run report (on stderr for the live taps,
// after the findings for check and replay). Transport adapters fill
// Streams, NotAudited and NotPossible; Levels and Findings come from a
// Collector (Collector.Summary).
type Summary struct {
	// Sources is how many files or captures were checked (0: a live link).
	Sources int `json:"sources,omitempty"`
	// Streams describes the bytes that crossed the tap, one per direction.
	Streams []Stream `json:"streams,omitempty"`
	// Levels and Findings count findings by level and by check.
	Levels   LevelCounts  `json:"levels"`
	Findings []CheckCount `json:"findings"`
	// NotAudited is how many frames were forwarded but not checked (audit
	// queue full, audit copy truncated).
	NotAudited uint64 `json:"notAudited,omitempty"`
	// LogDropped is how many findings the violation log could not take.
	LogDropped uint64 `json:"logDropped,omitempty"`
	// NotPossible lists checks that could not be made, and why.
	NotPossible []NotPossible `json:"notPossible,omitempty"`
	// Baselined counts findings a --baseline accepted; Claim is the
	// --claim matrix (both set by check and replay, see report.Run).
	Baselined int          `json:"baselined,omitempty"`
	Claim     *ClaimMatrix `json:"claim,omitempty"`
	// Inputs says, for each file checked, what it was and how much of it
	// was audited.
	Inputs []Input `json:"inputs,omitempty"`
	// ExchangesOmitted is how many exchanges are missing from a JSON
	// report's exchanges list: a conversation keeps only its most recent
	// answered exchanges (tap.DefaultKeepAnswered per connection) so
	// memory stays bounded. Their findings are all reported.
	ExchangesOmitted int `json:"exchangesOmitted,omitempty"`
	// ExchangesOmittedReason says why, when ExchangesOmitted > 0.
	ExchangesOmittedReason string `json:"exchangesOmittedReason,omitempty"`
	// FindingsTo says where the findings went, for a live tap's summary
	// ("the violation log /var/log/v.log", "standard error").
	FindingsTo []string `json:"findingsTo,omitempty"`
	// OlderDrafts names the earlier states of the draft whose shapes the
	// findings matched (an SDK pinned to an older schema revision).
	OlderDrafts []string `json:"olderDrafts,omitempty"`
	// Scenarios is, for a live tap with --inject-plan, what each
	// scenario's faults did on the link.
	Scenarios []Scenario `json:"scenarios,omitempty"`
}

// A Scenario is what one --inject-plan scenario's faults did on a link:
// how many were injected, how often the harness re-sent a request a fault
// hit, and the findings about those requests (none: the link's checks
// passed; the conduct checks are judged across links, by replay --conduct
// or the conduct server).
type Scenario struct {
	Name     string   `json:"name"`
	Injected int      `json:"injected"`
	Resent   int      `json:"resent"`
	Findings []CheckN `json:"findings,omitempty"`
}

// CheckN is a count of findings under one check.
type CheckN struct {
	Check string `json:"check"`
	N     int    `json:"n"`
}

// An Input is one file given to check or replay.
type Input struct {
	Name string `json:"name"`
	// Kind is what the content is: capture, stream, message, registration
	// (gzip-compressed inputs say so: "capture, gzip").
	Kind string `json:"kind"`
	// Frames is how many frames were audited (a registration: 0).
	Frames int `json:"frames"`
	// Bytes is the input's size as stored; SHA256 its hex SHA-256 when
	// it was read whole.
	Bytes  uint64 `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Damaged is how many records could not be read and were skipped.
	Damaged int `json:"damaged,omitempty"`
	// Error says why the input could not be checked (whole or in part):
	// empty, not traffic, unreadable. "" when it was.
	Error string `json:"error,omitempty"`
	// Injected says the input is the capture of a run that injected
	// faults on purpose (--inject): the header's text.
	Injected string `json:"injected,omitempty"`
}

// A Stream is what one direction of a link carried.
type Stream struct {
	// Dir is the sender.
	Dir    tap.Direction `json:"direction"`
	Frames uint64        `json:"frames"`
	Bytes  uint64        `json:"bytes"`
	// SHA256 is the hex SHA-256 of every byte forwarded in this direction,
	// in order: equal digests on both sides of the tap prove transparency.
	SHA256 string `json:"sha256,omitempty"`
}

// A NotPossible says why a check could not be made on this run.
type NotPossible struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

// A Meter measures one direction of a link for its Stream: bytes, frames
// and a running SHA-256 of the bytes. It is safe for concurrent use; a
// transport feeds it a copy of what it forwarded.
type Meter struct {
	Dir tap.Direction

	mu     sync.Mutex // guards the fields below
	h      hash.Hash
	frames uint64
	bytes  uint64
}

// NewMeter returns a meter for the bytes sent by dir.
func NewMeter(dir tap.Direction) *Meter { return &Meter{Dir: dir, h: sha256.New()} }

// Write adds forwarded bytes. It never fails.
func (m *Meter) Write(p []byte) (int, error) {
	m.mu.Lock()
	m.h.Write(p)
	m.bytes += uint64(len(p))
	m.mu.Unlock()
	return len(p), nil
}

// AddFrames counts n frames.
func (m *Meter) AddFrames(n uint64) {
	m.mu.Lock()
	m.frames += n
	m.mu.Unlock()
}

// Stream returns what the meter has seen so far.
func (m *Meter) Stream() Stream {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stream{Dir: m.Dir, Frames: m.frames, Bytes: m.bytes, SHA256: hex.EncodeToString(m.h.Sum(nil))}
}

// WriteText renders the summary for people, a few lines starting with
// "summary:". Names, errors and example findings are made printable
// (internal/printable).
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	if s.Sources > 0 {
		failed := 0
		for _, in := range s.Inputs {
			if in.Error != "" {
				failed++
			}
		}
		checked := s.Sources - failed
		notChecked := ""
		if failed > 0 {
			notChecked = fmt.Sprintf(" (%d not checked)", failed)
		}
		printable.Fprintf(&b, "summary: %d %s checked%s, %s\n", checked, plural(checked, "source", "sources"), notChecked, levelText(s.Levels))
	} else {
		printable.Fprintf(&b, "summary: %s\n", levelText(s.Levels))
	}
	for _, st := range s.Streams {
		printable.Fprintf(&b, "  %s -> %s: %d %s, %d %s", st.Dir, other(st.Dir),
			st.Frames, plural(int(st.Frames), "frame", "frames"), st.Bytes, plural(int(st.Bytes), "byte", "bytes"))
		if st.SHA256 != "" {
			printable.Fprintf(&b, ", sha256 %s", st.SHA256)
		}
		b.WriteString("\n")
	}
	for _, in := range s.Inputs {
		if strings.HasPrefix(in.Kind, "registration") {
			printable.Fprintf(&b, "  %s (%s): checked", in.Name, in.Kind)
		} else {
			printable.Fprintf(&b, "  %s (%s): %d %s audited", in.Name, in.Kind, in.Frames, plural(in.Frames, "frame", "frames"))
		}
		if in.Damaged > 0 {
			printable.Fprintf(&b, ", %d damaged %s skipped", in.Damaged, plural(in.Damaged, "record", "records"))
		}
		if in.Error != "" {
			printable.Fprintf(&b, "; NOT CHECKED: %s", in.Error)
		}
		if in.Injected != "" {
			printable.Fprintf(&b, "; %s", in.Injected)
		}
		b.WriteString("\n")
	}
	for _, cc := range s.Findings {
		if cc.First != "" {
			printable.Fprintf(&b, "  %-8s %s; first: %s\n", cc.Check, levelText(cc.LevelCounts), cc.First)
		} else {
			printable.Fprintf(&b, "  %-8s %s\n", cc.Check, levelText(cc.LevelCounts))
		}
	}
	if s.NotAudited > 0 {
		printable.Fprintf(&b, "  frames not audited: %d (forwarded unchanged)\n", s.NotAudited)
	}
	if s.LogDropped > 0 {
		printable.Fprintf(&b, "  findings not logged: %d (log buffer full)\n", s.LogDropped)
	}
	for _, sc := range s.Scenarios {
		writeScenario(&b, sc)
	}
	for _, to := range s.FindingsTo {
		printable.Fprintf(&b, "  findings written to %s\n", to)
	}
	if len(s.OlderDrafts) > 0 {
		printable.Fprintf(&b, "  older draft: some findings match shapes of %s; an SDK may pin an older schema revision\n", strings.Join(s.OlderDrafts, " and of "))
	}
	for _, np := range s.NotPossible {
		printable.Fprintf(&b, "  not checked: %s (%s)\n", np.Check, np.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func levelText(lc LevelCounts) string {
	return fmt.Sprintf("%d %s, %d %s, %d info", lc.Error, plural(lc.Error, "error", "errors"),
		lc.Warn, plural(lc.Warn, "warning", "warnings"), lc.Info)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func other(d tap.Direction) string {
	switch d {
	case tap.FromHarness:
		return "backend"
	case tap.FromBackend:
		return "harness"
	}
	return "unknown"
}

// writeScenario is one scenario's line: scenario → fault injected → what
// the harness did → verdict.
func writeScenario(b *strings.Builder, sc Scenario) {
	if sc.Injected == 0 {
		printable.Fprintf(b, "  scenario %s: fault never injected (no request matched)\n", sc.Name)
		return
	}
	did := "did not re-send the request"
	if sc.Resent > 0 {
		did = fmt.Sprintf("re-sent the request %d %s", sc.Resent, plural(sc.Resent, "time", "times"))
	}
	verdict := "pass"
	if len(sc.Findings) > 0 {
		var vs []string
		for _, f := range sc.Findings {
			vs = append(vs, fmt.Sprintf("%s ×%d", f.Check, f.N))
		}
		verdict = strings.Join(vs, ", ")
	}
	printable.Fprintf(b, "  scenario %s: fault injected %d %s → the harness %s → verdict on this link: %s\n",
		sc.Name, sc.Injected, plural(sc.Injected, "time", "times"), did, verdict)
}
