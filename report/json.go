package report

import (
	"encoding/json"
	"io"

	"github.com/ahp-tap/ahp-tap/tap"
)

// JSONFinding is a finding in a JSON report: the finding's fields plus the
// source it came from.
type JSONFinding struct {
	Source string `json:"source,omitempty"`
	tap.Finding
}

// JSONReport is the document WriteJSON writes.
type JSONReport struct {
	Findings []JSONFinding `json:"findings"`
	Summary  *Summary      `json:"summary,omitempty"`
}

// WriteJSON writes every finding and the summary as one indented JSON
// document (see JSONReport).
func WriteJSON(w io.Writer, sources []Source, s *Summary) error {
	doc := JSONReport{Findings: []JSONFinding{}, Summary: s}
	for _, src := range sources {
		for _, f := range src.Findings {
			doc.Findings = append(doc.Findings, JSONFinding{Source: src.Name, Finding: f})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
