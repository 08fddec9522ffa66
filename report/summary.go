package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"

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
	// OlderDrafts names the earlier states of the draft whose shapes the
	// findings matched (an SDK pinned to an older schema revision).
	OlderDrafts []string `json:"olderDrafts,omitempty"`
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
// "summary:".
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	if s.Sources > 0 {
		fmt.Fprintf(&b, "summary: %d %s checked, %s\n", s.Sources, plural(s.Sources, "source", "sources"), levelText(s.Levels))
	} else {
		fmt.Fprintf(&b, "summary: %s\n", levelText(s.Levels))
	}
	for _, st := range s.Streams {
		fmt.Fprintf(&b, "  %s -> %s: %d %s, %d %s", st.Dir, other(st.Dir),
			st.Frames, plural(int(st.Frames), "frame", "frames"), st.Bytes, plural(int(st.Bytes), "byte", "bytes"))
		if st.SHA256 != "" {
			fmt.Fprintf(&b, ", sha256 %s", st.SHA256)
		}
		b.WriteString("\n")
	}
	for _, cc := range s.Findings {
		fmt.Fprintf(&b, "  %-8s %s\n", cc.Check, levelText(cc.LevelCounts))
	}
	if s.NotAudited > 0 {
		fmt.Fprintf(&b, "  frames not audited: %d (forwarded unchanged)\n", s.NotAudited)
	}
	if s.LogDropped > 0 {
		fmt.Fprintf(&b, "  findings not logged: %d (log buffer full)\n", s.LogDropped)
	}
	if len(s.OlderDrafts) > 0 {
		fmt.Fprintf(&b, "  older draft: some findings match shapes of %s; an SDK may pin an older schema revision\n", strings.Join(s.OlderDrafts, " and of "))
	}
	for _, np := range s.NotPossible {
		fmt.Fprintf(&b, "  not checked: %s (%s)\n", np.Check, np.Reason)
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
