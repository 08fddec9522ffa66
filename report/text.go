package report

import (
	"bufio"
	"fmt"
	"github.com/ahp-tap/ahp-tap/conduct"
	"io"
	"strings"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A Source is what was checked (a file, a capture, a live link) and the
// findings it produced, in order.
type Source struct {
	// Name is the file name, or "" for a live link.
	Name     string        `json:"name,omitempty"`
	Findings []tap.Finding `json:"-"`
	// Lines, when set, holds the 1-based line in the input of each
	// finding's frame (0: not known), parallel to Findings: the text
	// report then locates a finding as NAME:LINE, as JUnit, SARIF and the
	// GitHub annotations do.
	Lines []int `json:"-"`
	// Exchanges are the exchange records of the source, for JSON reports.
	Exchanges []tap.ExchangeRecord `json:"-"`
	// ExchangesOmitted is how many exchange records were not kept (see
	// tap.Conversation.Forgotten).
	ExchangesOmitted int `json:"-"`
	// Input describes the file as an input (its kind, frames audited,
	// damaged records); nil for a source that is not an input file (a
	// registration given with --registration, a live link).
	Input *Input `json:"-"`
	// Chains are the per-event chains of a conduct timeline (the source
	// of the conduct findings across a registration's links).
	Chains []conduct.Chain `json:"-"`
	// ConductNotChecked says which conduct checks the timeline could not
	// make, and why (a link of the registration not given, say).
	ConductNotChecked []NotPossible `json:"-"`
	// Scenarios says, per --inject-plan scenario of the captures, what its
	// faults did across the links (the conduct source).
	Scenarios []ConductScenario `json:"-"`
}

// WriteText writes one line per finding, prefixed with its source's name,
// then the summary (when s is not nil). Every line is made printable
// (internal/printable): a key, a type or a name from the input cannot
// reach the terminal or the CI log as a control sequence or a workflow
// command.
func WriteText(w io.Writer, sources []Source, s *Summary) error {
	bw := bufio.NewWriter(w)
	var line strings.Builder
	for _, src := range sources {
		for i, f := range src.Findings {
			line.Reset()
			if src.Name != "" {
				line.WriteString(src.Name)
				if i < len(src.Lines) && src.Lines[i] > 0 {
					fmt.Fprintf(&line, ":%d", src.Lines[i])
				}
				line.WriteString(": ")
			}
			line.WriteString(f.String())
			if f.Rule != "" {
				line.WriteString(" [")
				line.WriteString(f.Rule)
				line.WriteString("]")
			}
			bw.WriteString(printable.Line(line.String()))
			bw.WriteString("\n")
		}
	}
	writeChainsText(bw, sources)
	writeScenariosText(bw, sources)
	if s != nil {
		if err := s.WriteText(bw); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// SummaryOf counts the findings of every source into a Summary.
func SummaryOf(sources []Source) *Summary {
	var c Collector
	c.Limit = 1
	for _, src := range sources {
		for _, f := range src.Findings {
			c.Write(f)
		}
	}
	s := c.Summary()
	s.Sources = len(sources)
	if len(sources) > 1 {
		// Several inputs: the example says which one it is from.
		from := map[string]string{}
		for _, src := range sources {
			for _, f := range src.Findings {
				if _, ok := from[f.Check]; !ok && src.Name != "" {
					from[f.Check] = src.Name
				}
			}
		}
		for i, cc := range s.Findings {
			if name := from[cc.Check]; name != "" && cc.First != "" {
				s.Findings[i].First = name + " " + cc.First
			}
		}
	}
	for _, src := range sources {
		if src.Input != nil {
			in := *src.Input
			in.Name = src.Name
			s.Inputs = append(s.Inputs, in)
		}
		s.ExchangesOmitted += src.ExchangesOmitted
	}
	if s.ExchangesOmitted > 0 {
		s.ExchangesOmittedReason = fmt.Sprintf("to keep memory bounded, each connection keeps only its %d most recent answered exchanges; every finding is still reported", tap.DefaultKeepAnswered)
	}
	return s
}
