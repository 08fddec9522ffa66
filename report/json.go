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

// JSONHeader says what produced a JSON report and from which inputs, so a
// report kept as a CI artefact can be traced to the tool and the exact
// bytes it judged.
type JSONHeader struct {
	Tool     string      `json:"tool"`
	Version  string      `json:"version"`
	Snapshot string      `json:"snapshot"`
	Inputs   []JSONInput `json:"inputs"`
}

// JSONInput is one input in a JSONHeader.
type JSONInput struct {
	Name   string `json:"name"`
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"`
}

// HeaderOf is the JSON header of a run that ended with e.
func HeaderOf(h Header, e *End) *JSONHeader {
	jh := &JSONHeader{Tool: h.Tool, Version: h.Version, Snapshot: h.Snapshot, Inputs: []JSONInput{}}
	if e != nil {
		for _, in := range e.Inputs {
			jh.Inputs = append(jh.Inputs, JSONInput{Name: in.Name, Frames: in.Frames, Bytes: in.Bytes, SHA256: in.SHA256})
		}
	}
	return jh
}

// JSONReport is the document WriteJSON writes.
type JSONReport struct {
	Header   *JSONHeader   `json:"header,omitempty"`
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
	return WriteJSONWithHeader(w, nil, sources, s)
}

// WriteJSONWithHeader is WriteJSON with a header first (nil: none).
func WriteJSONWithHeader(w io.Writer, h *JSONHeader, sources []Source, s *Summary) error {
	doc := JSONReport{Header: h, Findings: []JSONFinding{}, Summary: s}
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
