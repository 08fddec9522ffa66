// Package diff compares two recordings (`ahp-tap diff`, docs/diff.md):
// exchanges matched by event identity, their answers compared with
// package answers (as mock harness compares a live answer with a
// recording), findings compared by kind.
package diff

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/ahp-tap/ahp-tap/answers"
	"github.com/ahp-tap/ahp-tap/capture"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// DefaultWindow is the default --window: how many bytes of exchanges seen
// on one side and not yet on the other the diff holds at once.
const DefaultWindow = 64 << 20

// maxLine caps one stream line of a recording replayed for its findings,
// as replay and the live taps cap theirs.
const maxLine = stdio.DefaultMaxAuditLine

// maxFindingKinds caps the distinct kinds of finding a diff compares per
// recording; past it the rest are counted, not compared.
const maxFindingKinds = 10000

// Compare compares the recordings a and b, holding at most window bytes
// of exchanges not matched yet, and reporting answers whose latency
// differs by more than latency (0: latency is not compared).
func Compare(a, b string, window int64, latency time.Duration) (*Result, error) {
	var sides [2]*diffSide
	for i, name := range []string{a, b} {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sides[i] = &diffSide{name: name, r: capture.NewReader(f), pending: map[string]*diffPending{}, seen: map[string]int{}}
	}
	res := &Result{A: a, B: b, Changed: []diffChange{}, OnlyInA: []diffOnly{}, OnlyInB: []diffOnly{},
		NewFindings: []diffFinding{}, GoneFindings: []diffFinding{}}
	if err := matchExchanges(sides, window, latency, res); err != nil {
		return nil, err
	}
	for i, name := range []string{a, b} {
		kinds, err := findingKinds(name)
		if err != nil {
			return nil, err
		}
		sides[i].findings = kinds
	}
	res.compareFindings(sides[0].findings, sides[1].findings)
	res.Equal = len(res.Changed) == 0 && len(res.OnlyInA) == 0 && len(res.OnlyInB) == 0 && len(res.NewFindings) == 0 && len(res.GoneFindings) == 0
	return res, nil
}

// A diffExchange is one answered (or unanswered) request of a recording,
// as the diff keeps it: its identity, its answer's bytes and its latency.
type diffExchange struct {
	id       string // event identity: what matches it with the other side
	describe string // for people: "#3 hooks/intercept tool.before id \"evt_1\""
	resp     []byte // the answer's bytes; nil: never answered
	latency  time.Duration
	order    uint64 // arrival order, for eviction from the window
	side     int
}

func (e *diffExchange) size() int64 { return int64(len(e.resp)+len(e.id)+len(e.describe)) + 96 }

// A diffPending is a request not answered yet.
type diffPending struct {
	id, describe string
	at           time.Time
}

// A diffSide reads one recording exchange by exchange.
type diffSide struct {
	name     string
	r        *capture.Reader
	pending  map[string]*diffPending // by conn and JSON-RPC id
	seen     map[string]int          // exchanges per base identity: the second of an event id is its retry
	queue    []*diffExchange
	eof      bool
	count    int
	findings map[string]int
}

// identity is what an exchange is matched on: the event id when the
// request carries one (a retry keeps its event's id: the second delivery
// is "evt_1#2"), else the method and event type in order
// ("hooks/capabilities#1"). A long identity is kept as its sha256.
func (s *diffSide) identity(f *tap.Frame, method string) string {
	base := method
	if t, ok := f.Event().Get("type").Text(); ok {
		base += " " + t
	}
	if id, ok := f.Event().Get("id").Text(); ok {
		base = "event " + id
	}
	if len(base) > 128 {
		sum := sha256.Sum256([]byte(base))
		base = "sha256:" + hex.EncodeToString(sum[:])
	}
	s.seen[base]++
	return fmt.Sprintf("%s#%d", base, s.seen[base])
}

// next returns the side's next completed exchange, or nil at the end of
// the recording (then every request never answered, in no order).
func (s *diffSide) next(maxPending int) (*diffExchange, error) {
	for len(s.queue) == 0 && !s.eof {
		it, err := s.r.Next()
		if err == io.EOF {
			s.eof = true
			for _, p := range s.pending {
				s.queue = append(s.queue, &diffExchange{id: p.id, describe: p.describe})
			}
			slices.SortFunc(s.queue, func(a, b *diffExchange) int { return compareStrings(a.id, b.id) })
			s.pending = nil
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		f := it.Frame
		if f == nil {
			continue
		}
		f.Decode()
		switch msg := f.Msg.(type) {
		case *tap.Request:
			if f.Dir != tap.FromHarness {
				continue
			}
			if len(s.pending) >= maxPending {
				// Bounded: the oldest is not known cheaply; drop this
				// one's answer-wait by reporting it unanswered now.
				s.queue = append(s.queue, &diffExchange{id: s.identity(f, msg.Method), describe: describeFrame(f, msg.Method, msg.ID)})
				continue
			}
			s.pending[f.Conn+"|"+tap.IDKey(msg.ID)] = &diffPending{id: s.identity(f, msg.Method), describe: describeFrame(f, msg.Method, msg.ID), at: f.Time}
		case *tap.Response:
			if f.Dir == tap.FromHarness {
				continue
			}
			k := f.Conn + "|" + tap.IDKey(msg.ID)
			p, ok := s.pending[k]
			if !ok {
				continue
			}
			delete(s.pending, k)
			s.queue = append(s.queue, &diffExchange{id: p.id, describe: p.describe, resp: f.Raw, latency: f.Time.Sub(p.at)})
		}
	}
	if len(s.queue) == 0 {
		return nil, nil
	}
	e := s.queue[0]
	s.queue = s.queue[1:]
	s.count++
	return e, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func describeFrame(f *tap.Frame, method string, id *tap.Value) string {
	s := fmt.Sprintf("#%d %s", f.Seq, method)
	if t, ok := f.Event().Get("type").Text(); ok {
		s += " " + t
	}
	if id != nil {
		s += " id " + tap.IDText(id)
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// A Result is the diff's result, as --format json writes it.
type Result struct {
	A            string        `json:"a"`
	B            string        `json:"b"`
	Equal        bool          `json:"equal"`
	ExchangesA   int           `json:"exchangesA"`
	ExchangesB   int           `json:"exchangesB"`
	Matched      int           `json:"matched"`
	Changed      []diffChange  `json:"changed"`
	OnlyInA      []diffOnly    `json:"onlyInA"`
	OnlyInB      []diffOnly    `json:"onlyInB"`
	NewFindings  []diffFinding `json:"newFindings"`
	GoneFindings []diffFinding `json:"goneFindings"`
	Evicted      int           `json:"evicted"`
	Uncompared   int           `json:"findingKindsNotCompared"`
}

type diffChange struct {
	Exchange    string           `json:"exchange"`
	A           string           `json:"a"`
	B           string           `json:"b"`
	Differences []diffDifference `json:"differences,omitempty"`
	LatencyA    *float64         `json:"latencyMsA,omitempty"`
	LatencyB    *float64         `json:"latencyMsB,omitempty"`
}

type diffDifference struct {
	Pointer string `json:"pointer"`
	A       string `json:"a"`
	B       string `json:"b"`
}

type diffOnly struct {
	Exchange string `json:"exchange"`
	Describe string `json:"describe"`
	Evicted  bool   `json:"evicted,omitempty"`
}

type diffFinding struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
}

// matchExchanges reads both recordings in step, matching each completed
// exchange with the other side's exchange of the same identity. Unmatched
// exchanges wait in a window of at most window bytes; past it the oldest
// is reported as found in one recording only (evicted).
func matchExchanges(sides [2]*diffSide, window int64, latency time.Duration, res *Result) error {
	waiting := [2]map[string]*diffExchange{{}, {}}
	var (
		order []*diffExchange // arrival order of the waiting, some matched since
		held  int64
		seq   uint64
	)
	maxPending := int(window / 512)
	only := func(e *diffExchange, evicted bool) {
		o := diffOnly{Exchange: e.id, Describe: e.describe, Evicted: evicted}
		if e.side == 0 {
			res.OnlyInA = append(res.OnlyInA, o)
		} else {
			res.OnlyInB = append(res.OnlyInB, o)
		}
	}
	for !sides[0].eof || !sides[1].eof || len(sides[0].queue)+len(sides[1].queue) > 0 {
		progressed := false
		for i, s := range sides {
			e, err := s.next(maxPending)
			if err != nil {
				return err
			}
			if e == nil {
				continue
			}
			progressed = true
			e.side, seq = i, seq+1
			e.order = seq
			if o, ok := waiting[1-i][e.id]; ok {
				delete(waiting[1-i], e.id)
				held -= o.size()
				a, b := o, e
				if i == 0 {
					a, b = e, o
				}
				res.Matched++
				res.compare(a, b, latency)
				continue
			}
			waiting[i][e.id] = e
			order = append(order, e)
			held += e.size()
			for held > window && len(order) > 0 {
				old := order[0]
				order = order[1:]
				if waiting[old.side][old.id] != old {
					continue // matched since
				}
				delete(waiting[old.side], old.id)
				held -= old.size()
				res.Evicted++
				only(old, true)
			}
			if len(order) > 1024 && len(order) > 2*(len(waiting[0])+len(waiting[1])) {
				order = slices.DeleteFunc(order, func(o *diffExchange) bool { return waiting[o.side][o.id] != o })
			}
		}
		if !progressed {
			break
		}
	}
	for _, e := range order {
		if waiting[e.side][e.id] == e {
			only(e, false)
		}
	}
	res.ExchangesA, res.ExchangesB = sides[0].count, sides[1].count
	return nil
}

// compare adds a's and b's differences, if any, to the result.
func (res *Result) compare(a, b *diffExchange, latency time.Duration) {
	c := diffChange{Exchange: a.id, A: a.describe, B: b.describe}
	var fa, fb *tap.Frame
	if a.resp != nil {
		fa = &tap.Frame{Raw: a.resp}
	}
	if b.resp != nil {
		fb = &tap.Frame{Raw: b.resp}
	}
	for _, d := range answers.Diff(fa, fb, nil) {
		c.Differences = append(c.Differences, diffDifference{Pointer: d.Pointer, A: d.Recorded, B: d.Got})
	}
	if latency > 0 && a.resp != nil && b.resp != nil && (b.latency-a.latency > latency || a.latency-b.latency > latency) {
		la, lb := float64(a.latency)/float64(time.Millisecond), float64(b.latency)/float64(time.Millisecond)
		c.LatencyA, c.LatencyB = &la, &lb
	}
	if len(c.Differences) > 0 || c.LatencyA != nil {
		res.Changed = append(res.Changed, c)
	}
}

// findingKinds replays a recording through the rules, as replay would with
// no flags, and counts its findings by kind: check, rule, level, pointer,
// event type and who it binds (what stays the same between two runs of the
// same traffic; ids and times do not).
func findingKinds(name string) (map[string]int, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	kinds := map[string]int{}
	base := tap.Config{Snapshot: tap.DefaultSnapshot}
	sink := tap.SinkFunc(func(fd tap.Finding) {
		k := fmt.Sprintf("%s %s %s %s %s %s", fd.Check, fd.Rule, fd.Level, fd.Pointer, fd.EventType, fd.Binds)
		if _, ok := kinds[k]; ok || len(kinds) < maxFindingKinds {
			kinds[k]++
		} else {
			kinds[""]++ // not compared: past the cap
		}
	})
	err = capture.Replay(capture.NewReader(f), func(h *capture.Header) (*tap.Session, error) {
		cfg, err := h.Config(base, capture.Overrides{})
		if err != nil {
			return nil, err
		}
		return tap.NewSession(tap.SessionConfig{Config: cfg, Rules: rules.Set(rules.Options{}), Sink: sink, MaxLine: maxLine}), nil
	}, func(s *tap.Session) { s.Close() })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return kinds, nil
}

// compareFindings lists the kinds of finding B has more of than A (new)
// and fewer of (gone).
func (res *Result) compareFindings(a, b map[string]int) {
	res.Uncompared = max(a[""], b[""])
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, dup := a[k]; !dup && !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if k == "" {
			continue
		}
		switch d := b[k] - a[k]; {
		case d > 0:
			res.NewFindings = append(res.NewFindings, diffFinding{Kind: k, Count: d})
		case d < 0:
			res.GoneFindings = append(res.GoneFindings, diffFinding{Kind: k, Count: -d})
		}
	}
}

// Text writes the result for people, every line through printable.
func (res *Result) Text(w io.Writer) {
	p := func(format string, args ...any) { printable.Fprintf(w, format, args...) }
	p("ahp-tap diff ▸ A %s: %d exchanges; B %s: %d exchanges; %d matched\n", res.A, res.ExchangesA, res.B, res.ExchangesB, res.Matched)
	for _, c := range res.Changed {
		p("changed %s (A %s, B %s)\n", c.Exchange, c.A, c.B)
		for _, d := range c.Differences {
			ptr := d.Pointer
			if ptr == "" {
				ptr = "(whole answer)"
			}
			p("    %s: A %s, B %s\n", ptr, d.A, d.B)
		}
		if c.LatencyA != nil {
			p("    latency: A %.1fms, B %.1fms\n", *c.LatencyA, *c.LatencyB)
		}
	}
	for _, o := range res.OnlyInA {
		p("only in A: %s (%s)%s\n", o.Exchange, o.Describe, evictedNote(o.Evicted))
	}
	for _, o := range res.OnlyInB {
		p("only in B: %s (%s)%s\n", o.Exchange, o.Describe, evictedNote(o.Evicted))
	}
	for _, f := range res.NewFindings {
		p("new finding: %s (%d more in B)\n", f.Kind, f.Count)
	}
	for _, f := range res.GoneFindings {
		p("gone finding: %s (%d fewer in B)\n", f.Kind, f.Count)
	}
	if res.Uncompared > 0 {
		p("note: %d findings past %d kinds were not compared\n", res.Uncompared, maxFindingKinds)
	}
	if res.Equal {
		p("equal\n")
	}
}

func evictedNote(evicted bool) string {
	if evicted {
		return " [unmatched past the --window]"
	}
	return ""
}
