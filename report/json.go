package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/ahp-tap/ahp-tap/conduct"
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
	// Injected says the input's traffic was altered on purpose (--inject).
	Injected string `json:"injected,omitempty"`
}

// HeaderOf is the JSON header of a run that ended with e.
func HeaderOf(h Header, e *End) *JSONHeader {
	jh := &JSONHeader{Tool: h.Tool, Version: h.Version, Snapshot: h.Snapshot, Inputs: []JSONInput{}}
	if e != nil {
		for _, in := range e.Inputs {
			jh.Inputs = append(jh.Inputs, JSONInput{Name: in.Name, Frames: in.Frames, Bytes: in.Bytes, SHA256: in.SHA256, Injected: in.Injected})
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
	// Chains is the per-event view of the conduct timeline across a
	// registration's links: which backend got each event when, what it
	// answered, and where the chain stopped (the most recent 256).
	Chains  []conduct.Chain `json:"chains,omitempty"`
	Summary *Summary        `json:"summary,omitempty"`
}

// WriteJSON writes every finding and the summary as one indented JSON
// document (see JSONReport).
func WriteJSON(w io.Writer, sources []Source, s *Summary) error {
	return WriteJSONWithHeader(w, nil, sources, s)
}

// WriteJSONWithHeader is WriteJSON with a header first (nil: none).
//
// The document is written one finding and one exchange at a time, byte
// for byte as encoding/json would indent JSONReport, so that a report of
// many findings never holds its whole text in memory (issue 21 item 3).
func WriteJSONWithHeader(w io.Writer, h *JSONHeader, sources []Source, s *Summary) error {
	jw := &jsonWriter{w: bufio.NewWriterSize(w, 64<<10)}
	jw.raw("{\n")
	if h != nil {
		jw.field("header", h)
		jw.raw(",\n")
	}
	jw.raw(`  "findings": [`)
	n := 0
	for _, src := range sources {
		for _, f := range src.Findings {
			jw.elem(n, JSONFinding{Source: src.Name, Finding: f})
			n++
		}
	}
	jw.endArray(n)
	n = 0
	for _, src := range sources {
		for _, x := range src.Exchanges {
			if n == 0 {
				jw.raw(",\n" + `  "exchanges": [`)
			}
			jw.elem(n, JSONExchange{Source: src.Name, ExchangeRecord: x})
			n++
		}
	}
	if n > 0 {
		jw.endArray(n)
	}
	n = 0
	for _, src := range sources {
		for _, c := range src.Chains {
			if n == 0 {
				jw.raw(",\n" + `  "chains": [`)
			}
			jw.elem(n, c)
			n++
		}
	}
	if n > 0 {
		jw.endArray(n)
	}
	if s != nil {
		jw.raw(",\n")
		jw.field("summary", s)
	}
	jw.raw("\n}\n")
	if jw.err != nil {
		return jw.err
	}
	return jw.w.Flush()
}

// jsonWriter writes a JSONReport piece by piece, indented as
// json.Encoder.SetIndent("", "  ") indents the whole, without escaping
// HTML. The first error is kept.
type jsonWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	err error
}

func (jw *jsonWriter) raw(s string) {
	if jw.err == nil {
		_, jw.err = jw.w.WriteString(s)
	}
}

// value writes v as it appears at depth (each line after the first
// indented by prefix).
func (jw *jsonWriter) value(v any, prefix string) {
	if jw.err != nil {
		return
	}
	jw.buf.Reset()
	enc := json.NewEncoder(&jw.buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if jw.err = enc.Encode(v); jw.err != nil {
		return
	}
	_, jw.err = jw.w.Write(bytes.TrimSuffix(jw.buf.Bytes(), []byte("\n")))
}

// field writes `  "name": v` (a member of the top-level object).
func (jw *jsonWriter) field(name string, v any) {
	jw.raw(`  "` + name + `": `)
	jw.value(v, "  ")
}

// elem writes the i-th element of a top-level member's array.
func (jw *jsonWriter) elem(i int, v any) {
	if i > 0 {
		jw.raw(",")
	}
	jw.raw("\n    ")
	jw.value(v, "    ")
}

// endArray closes a top-level member's array of n elements.
func (jw *jsonWriter) endArray(n int) {
	if n == 0 {
		jw.raw("]")
		return
	}
	jw.raw("\n  ]")
}
