package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/tap"
)

// GitHub shows at most 10 annotations of each level per step: more are
// dropped silently, so the writer says how many it left out.
const (
	GitHubMaxAnnotations = 10
	// GitHubMaxPerGroup caps the log lines listed under one check.
	GitHubMaxPerGroup = 50
)

// GitHub writes GitHub Actions workflow commands: per check a collapsible
// group, its first findings as ::error/::warning/::notice annotations
// (file, line, title = check ID), the rest as log lines, then a closing
// line. When SummaryPath is set (GITHUB_STEP_SUMMARY) it appends a
// Markdown summary table there. Memory: at most GitHubMaxPerGroup findings
// per check.
type GitHub struct {
	w io.Writer
	// SummaryPath is the file to append the Markdown summary to ("": none).
	SummaryPath string

	h      *Header
	order  []string
	byChk  map[string][]Item
	counts map[string]*LevelCounts
}

// NewGitHub returns a GitHub workflow-command writer to w; summaryPath is
// usually os.Getenv("GITHUB_STEP_SUMMARY").
func NewGitHub(w io.Writer, summaryPath string) *GitHub {
	return &GitHub{w: w, SummaryPath: summaryPath, byChk: map[string][]Item{}, counts: map[string]*LevelCounts{}}
}

// Begin implements Writer.
func (g *GitHub) Begin(h *Header) error { g.h = h; return nil }

// Input implements Writer.
func (g *GitHub) Input(*StreamInput) error { return nil }

// Exchange implements Writer.
func (g *GitHub) Exchange(*Exchange) error { return nil }

// Finding implements Writer.
func (g *GitHub) Finding(it *Item) error {
	c := it.Finding.Check
	lc := g.counts[c]
	if lc == nil {
		lc = &LevelCounts{}
		g.counts[c] = lc
		g.order = append(g.order, c)
	}
	lc.add(it.Finding.Level)
	if len(g.byChk[c]) < GitHubMaxPerGroup {
		x := *it
		x.Frame = nil // not shown; do not keep
		g.byChk[c] = append(g.byChk[c], x)
	}
	return nil
}

// End implements Writer.
func (g *GitHub) End(e *End) error {
	bw := bufio.NewWriter(g.w)
	budget := map[tap.Level]int{tap.Error: GitHubMaxAnnotations, tap.Warn: GitHubMaxAnnotations, tap.Info: GitHubMaxAnnotations}
	left := map[tap.Level]int{}
	for _, c := range sortedIDs(g.order) {
		lc := g.counts[c]
		fmt.Fprintf(bw, "::group::%s: %s\n", escapeData(c), escapeData(levelText(*lc)))
		for _, it := range g.byChk[c] {
			f := it.Finding
			if !it.Baselined && budget[f.Level] > 0 {
				budget[f.Level]--
				fmt.Fprintf(bw, "::%s %s::%s\n", ghCommand(f.Level), ghProps(&it), escapeData(resultText(&it)))
				continue
			}
			if !it.Baselined {
				left[f.Level]++
			}
			fmt.Fprintln(bw, escapeData(findingLine(&it)))
		}
		if n := lc.Total() - len(g.byChk[c]); n > 0 {
			printable.Fprintf(bw, "… and %d more %s findings (see the SARIF or JUnit report)\n", n, c)
		}
		bw.WriteString("::endgroup::\n")
	}
	for _, lvl := range []tap.Level{tap.Error, tap.Warn, tap.Info} {
		if left[lvl] > 0 {
			fmt.Fprintf(bw, "::notice title=ahp-tap::%d more %s findings were listed in the log, not annotated (GitHub shows %d annotations per level and step)\n",
				left[lvl], lvl, GitHubMaxAnnotations)
		}
	}
	for _, st := range StaleLines(e) {
		fmt.Fprintf(bw, "::error title=stale baseline entry::%s\n", escapeData(st))
	}
	for _, in := range e.Inputs {
		if in.Injected != "" {
			fmt.Fprintf(bw, "::warning title=faults injected::%s\n", escapeData(InjectedLine(in)))
		}
	}
	fmt.Fprintf(bw, "ahp-tap: %s", levelText(e.Levels))
	if e.Baselined > 0 {
		fmt.Fprintf(bw, ", %d baselined", e.Baselined)
	}
	bw.WriteString("\n")
	if err := bw.Flush(); err != nil {
		return err
	}
	if g.SummaryPath == "" {
		return nil
	}
	// Never through a planted symlink, never blocking on a FIFO (issue 28
	// item 16).
	f, err := safefile.AppendExisting(g.SummaryPath)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %v", err)
	}
	werr := WriteMarkdownSummary(f, g.h, e)
	if err := f.Close(); werr == nil {
		werr = err
	}
	return werr
}

// WriteMarkdownSummary writes the run's summary as a Markdown table, per
// check: errors, warnings, info, and on which inputs the check passed,
// failed or was not exercised.
func WriteMarkdownSummary(w io.Writer, h *Header, e *End) error {
	var b strings.Builder
	verdict := "passed"
	if e.Failing() {
		verdict = "failed"
	}
	fmt.Fprintf(&b, "### ahp-tap: %s\n\n%s", verdict, levelText(e.Levels))
	if e.Baselined > 0 {
		fmt.Fprintf(&b, ", %d baselined", e.Baselined)
	}
	fmt.Fprintf(&b, " over %d %s.\n\n", len(e.Inputs), plural(len(e.Inputs), "input", "inputs"))
	for _, in := range e.Inputs {
		if in.Injected != "" {
			printable.Fprintf(&b, "> **%s**\n\n", InjectedLine(in))
		}
	}
	b.WriteString("| check | errors | warnings | info | passed | failed | not exercised |\n|---|---:|---:|---:|---:|---:|---:|\n")
	counts := map[string]CheckCount{}
	for _, cc := range e.ByCheck {
		counts[cc.Check] = cc
	}
	for _, c := range h.Catalogue {
		var pass, fail, skip int
		for _, in := range e.Inputs {
			for _, cs := range in.Checks {
				if cs.Check != c.ID {
					continue
				}
				switch {
				case cs.Failed():
					fail++
				case !cs.Exercised:
					skip++
				default:
					pass++
				}
			}
		}
		cc := counts[c.ID]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d |\n", c.ID, cc.Error, cc.Warn, cc.Info, pass, fail, skip)
	}
	for _, st := range StaleLines(e) {
		fmt.Fprintf(&b, "\n- :x: %s", st)
	}
	for _, np := range e.NotPossible {
		printable.Fprintf(&b, "\n- not checked: %s (%s)", np.Check, np.Reason)
	}
	b.WriteString("\n\n")
	return writeAll(w, b.String())
}

func ghCommand(l tap.Level) string {
	switch l {
	case tap.Error:
		return "error"
	case tap.Warn:
		return "warning"
	}
	return "notice"
}

func ghProps(it *Item) string {
	p := "file=" + escapeProp(it.URI)
	if it.Line > 0 {
		p += fmt.Sprintf(",line=%d", it.Line)
	}
	return p + ",title=" + escapeProp(it.Finding.Check)
}

// escapeData and escapeProp escape workflow command values as the
// Actions runner expects (toolkit/core's command.ts), after making them
// printable (internal/printable: no ESC, OSC or other control reaches the
// log, no newline can start a command, no "##[" can be one).
func escapeData(s string) string {
	return dataEscaper.Replace(printable.Line(s))
}

func escapeProp(s string) string {
	return propEscaper.Replace(printable.Line(s))
}

var (
	dataEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func sortedIDs(ids []string) []string {
	out := append([]string(nil), ids...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && checkLess(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
