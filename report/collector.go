package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Collector is a tap.Sink that keeps findings and counts them by check
// and level. It is safe for concurrent use. The zero value keeps every
// finding; set Limit to bound memory on a long-running link (counts stay
// exact, only the kept list stops growing).
type Collector struct {
	// Limit caps how many findings are kept (0: no cap).
	Limit int

	mu       sync.Mutex // guards the fields below
	findings []tap.Finding
	counts   map[string]*CheckCount
	levels   LevelCounts
	older    []string // distinct Finding.OlderDraft values, first seen first
}

// A CheckCount is how many findings one check produced, by level.
type CheckCount struct {
	Check string `json:"check"`
	LevelCounts
	// First is the check's first finding, shortened, for the text
	// summary's example column.
	First string `json:"-"`
}

// LevelCounts counts findings by level.
type LevelCounts struct {
	Error int `json:"error"`
	Warn  int `json:"warn"`
	Info  int `json:"info"`
}

func (lc *LevelCounts) add(l tap.Level) {
	switch l {
	case tap.Error:
		lc.Error++
	case tap.Warn:
		lc.Warn++
	default:
		lc.Info++
	}
}

// Total is the number of findings of every level.
func (lc LevelCounts) Total() int { return lc.Error + lc.Warn + lc.Info }

// AtLeast is the number of findings at level min or above.
func (lc LevelCounts) AtLeast(min tap.Level) int {
	n := lc.Error
	if min <= tap.Warn {
		n += lc.Warn
	}
	if min <= tap.Info {
		n += lc.Info
	}
	return n
}

// Write implements tap.Sink.
func (c *Collector) Write(f tap.Finding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = make(map[string]*CheckCount)
	}
	cc := c.counts[f.Check]
	if cc == nil {
		cc = &CheckCount{Check: f.Check, First: summaryExample(f)}
		c.counts[f.Check] = cc
	}
	cc.add(f.Level)
	c.levels.add(f.Level)
	if f.OlderDraft != "" && !slices.Contains(c.older, f.OlderDraft) {
		c.older = append(c.older, f.OlderDraft)
	}
	if c.Limit <= 0 || len(c.findings) < c.Limit {
		c.findings = append(c.findings, f)
	}
}

// exampleMax is how many characters of a finding's message the summary
// quotes as its check's example.
const exampleMax = 100

// summaryExample is f shortened to one summary line: where it is and the
// start of its message.
func summaryExample(f tap.Finding) string {
	msg := []rune(f.Message)
	text := string(msg)
	if len(msg) > exampleMax {
		text = string(msg[:exampleMax]) + "…"
	}
	where := ""
	if f.Seq != 0 {
		where = fmt.Sprintf("#%d sent by %s", f.Seq, f.Dir)
	}
	if f.Pointer != "" {
		where += " at " + f.Pointer
	}
	if where == "" {
		return text
	}
	return strings.TrimSpace(where) + ": " + text
}

// Findings returns a copy of the kept findings, in the order written.
func (c *Collector) Findings() []tap.Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]tap.Finding(nil), c.findings...)
}

// Levels returns the counts of every finding by level.
func (c *Collector) Levels() LevelCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.levels
}

// ByCheck returns the counts per check, sorted by check ID.
func (c *Collector) ByCheck() []CheckCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedCounts(c.counts)
}

// Summary returns a Summary holding the collector's counts; the caller
// fills in what only a transport knows (streams, frames not audited).
func (c *Collector) Summary() *Summary {
	s := &Summary{Levels: c.Levels(), Findings: c.ByCheck()}
	c.mu.Lock()
	s.OlderDrafts = slices.Clone(c.older)
	c.mu.Unlock()
	return s
}

func sortedCounts(m map[string]*CheckCount) []CheckCount {
	out := make([]CheckCount, 0, len(m))
	for _, cc := range m {
		out = append(out, *cc)
	}
	sort.Slice(out, func(i, j int) bool { return checkLess(out[i].Check, out[j].Check) })
	return out
}

// checkLess orders check IDs by family, then number ("BASE-2" < "BASE-10").
func checkLess(a, b string) bool {
	fa, na := splitCheck(a)
	fb, nb := splitCheck(b)
	if fa != fb {
		return fa < fb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitCheck(id string) (string, int) {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '-' {
			n := 0
			for _, r := range id[i+1:] {
				if r < '0' || r > '9' {
					return id, 0
				}
				n = n*10 + int(r-'0')
			}
			return id[:i], n
		}
	}
	return id, 0
}

// Count counts findings by check and level, for callers holding a slice.
func Count(findings []tap.Finding) (LevelCounts, []CheckCount) {
	var c Collector
	c.Limit = 1
	for _, f := range findings {
		c.Write(f)
	}
	return c.Levels(), c.ByCheck()
}
