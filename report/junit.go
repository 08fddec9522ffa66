package report

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/ahp-tap/ahp-tap/internal/printable"
)

// JUnitMaxPerCase caps the findings listed in one failing test case; the
// count stays exact ("and N more").
const JUnitMaxPerCase = 100

// JUnit writes JUnit XML as GitHub Actions and GitLab read it: one
// <testsuite> per input, one <testcase> per catalogue check (classname the
// input, name the check ID and summary), failing with its findings,
// passing when the traffic exercised the check cleanly, <skipped> with the
// reason when it did not. Memory: at most JUnitMaxPerCase findings per
// check and input.
type JUnit struct {
	w      io.Writer
	h      *Header
	cur    string
	sample map[string]map[string][]string // input -> check -> finding lines
}

// NewJUnit returns a JUnit writer to w.
func NewJUnit(w io.Writer) *JUnit { return &JUnit{w: w, sample: map[string]map[string][]string{}} }

// Begin implements Writer.
func (j *JUnit) Begin(h *Header) error { j.h = h; return nil }

// Input implements Writer.
func (j *JUnit) Input(in *StreamInput) error {
	j.cur = in.Name
	if j.sample[in.Name] == nil {
		j.sample[in.Name] = map[string][]string{}
	}
	return nil
}

// Exchange implements Writer.
func (j *JUnit) Exchange(*Exchange) error { return nil }

// Finding implements Writer.
func (j *JUnit) Finding(it *Item) error {
	m := j.sample[it.Input]
	if m == nil {
		m = map[string][]string{}
		j.sample[it.Input] = m
	}
	if len(m[it.Finding.Check]) < JUnitMaxPerCase {
		// Printable: XML 1.0 cannot carry most controls (encoding/xml
		// would write U+FFFD and lose them), and JUnit text ends up in CI
		// logs (one line each, no workflow command); ESC reads as \x1b.
		m[it.Finding.Check] = append(m[it.Finding.Check], printable.Line(findingLine(it)))
	}
	return nil
}

// findingLine renders a finding with its input, line and frame.
func findingLine(it *Item) string {
	f := it.Finding
	loc := it.Input
	if it.Line > 0 {
		loc += fmt.Sprintf(":%d", it.Line)
	}
	frame := ""
	if f.Seq > 0 {
		frame = fmt.Sprintf(" frame #%d (%s)", f.Seq, f.Dir)
	}
	ptr := ""
	if f.Pointer != "" {
		ptr = " at " + f.Pointer
	}
	base := ""
	if it.Baselined {
		base = " [baselined]"
	}
	return fmt.Sprintf("%s:%s %s %s%s: %s%s", loc, frame, f.Level, f.Check, ptr, f.Message, base)
}

// JUnitSuites is the document JUnit writes (exported so tests and users
// can read it back with encoding/xml).
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// A JUnitSuite is one input.
type JUnitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

// A JUnitProperty is a name/value pair of a suite.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// A JUnitCase is one check on one input.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// A JUnitFailure lists a failing check's findings.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// A JUnitSkipped says why a check was not exercised.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// End implements Writer.
func (j *JUnit) End(e *End) error {
	doc := JUnitSuites{Name: "ahp-tap"}
	summary := map[string]string{}
	for _, c := range j.h.Catalogue {
		summary[c.ID] = c.Summary
	}
	for _, in := range e.Inputs {
		s := JUnitSuite{Name: printable.String(in.Name), Properties: []JUnitProperty{{"snapshot", j.h.Snapshot}, {"frames", fmt.Sprint(in.Frames)}}}
		if in.SHA256 != "" {
			s.Properties = append(s.Properties, JUnitProperty{"sha256", in.SHA256})
		}
		if in.Injected != "" {
			s.Properties = append(s.Properties, JUnitProperty{"injected", printable.String(InjectedLine(in))})
		}
		for _, cs := range in.Checks {
			tc := JUnitCase{Name: cs.Check + " " + summary[cs.Check], Classname: s.Name}
			lines := j.sample[in.Name][cs.Check]
			switch {
			case cs.Failed():
				n := cs.Findings.Total()
				text := strings.Join(lines, "\n")
				if n > len(lines) {
					text += fmt.Sprintf("\n… and %d more", n-len(lines))
				}
				tc.Failure = &JUnitFailure{Type: cs.Check, Message: fmt.Sprintf("%s: %s", cs.Check, levelText(cs.Findings)), Text: text + "\n"}
				s.Failures++
			case !cs.Exercised:
				tc.Skipped = &JUnitSkipped{Message: printable.String(cs.Why())}
				s.Skipped++
			default:
				if len(lines) > 0 { // info findings: context, not failure
					tc.SystemOut = strings.Join(lines, "\n") + "\n"
				}
			}
			s.Tests++
			s.Cases = append(s.Cases, tc)
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	var extra []string
	extra = append(extra, StaleLines(e)...)
	if len(extra) > 0 {
		// Stale baseline entries fail the run: a suite of their own.
		s := JUnitSuite{Name: "baseline"}
		for _, x := range extra {
			s.Cases = append(s.Cases, JUnitCase{Name: "stale baseline entry", Classname: "baseline", Failure: &JUnitFailure{Type: "stale", Message: x, Text: x}})
			s.Tests++
			s.Failures++
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	bw := bufio.NewWriter(j.w)
	bw.WriteString(xml.Header)
	enc := xml.NewEncoder(bw)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	bw.WriteString("\n")
	return bw.Flush()
}
