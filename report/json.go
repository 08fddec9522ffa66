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

// JSONExchange is an exchange record in a JSON report, with its source.
type JSONExchange struct {
	Source string `json:"source,omitempty"`
	tap.ExchangeRecord
}

// JSONReport is the document WriteJSON writes.
type JSONReport struct {
	Findings []JSONFinding `json:"findings"`
	// Exchanges says what each exchange concluded (outcome, effective
	// edits or the reasons a harness must reject a response). A long
	// conversation keeps only its most recent answered exchanges, so
	// memory stays bounded: Summary.ExchangesOmitted says how many are
	// not listed.
	Exchanges []JSONExchange `json:"exchanges,omitempty"`
	Summary   *Summary       `json:"summary,omitempty"`
}

// WriteJSON writes every finding and the summary as one indented JSON
// document (see JSONReport).
func WriteJSON(w io.Writer, sources []Source, s *Summary) error {
	doc := JSONReport{Findings: []JSONFinding{}, Summary: s}
	for _, src := range sources {
		for _, f := range src.Findings {
			doc.Findings = append(doc.Findings, JSONFinding{Source: src.Name, Finding: f})
		}
		for _, x := range src.Exchanges {
			doc.Exchanges = append(doc.Exchanges, JSONExchange{Source: src.Name, ExchangeRecord: x})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
