package report

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// GitHub code scanning's limits on one SARIF upload.
const (
	SARIFMaxResults = 25000
	// SARIFMaxGzip is below GitHub's 10 MB gzipped cap, leaving room for
	// the rules and the closing notifications.
	SARIFMaxGzip = 9 << 20
)

// SARIF writes a SARIF 2.1.0 log with one run, streaming: the rules (the
// whole catalogue, so alerts of checks that no longer fire close) and
// then each result as it arrives; invocations close the run with how many
// results the caps left out.
type SARIF struct {
	w  *bufio.Writer
	gz *gzip.Writer // measures the gzipped size of what was written
	cz *countWriter

	// MaxResults and MaxGzip cap the results (defaults: GitHub's limits).
	MaxResults int
	MaxGzip    int64

	n, dropped int
}

// NewSARIF returns a SARIF writer to w.
func NewSARIF(w io.Writer) *SARIF {
	cz := &countWriter{}
	gz, _ := gzip.NewWriterLevel(cz, gzip.BestSpeed)
	return &SARIF{w: bufio.NewWriterSize(w, 64<<10), gz: gz, cz: cz, MaxResults: SARIFMaxResults, MaxGzip: SARIFMaxGzip}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func (s *SARIF) write(b []byte) error {
	s.gz.Write(b)
	_, err := s.w.Write(b)
	return err
}

type sarifMessage struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	ShortDescription sarifMessage      `json:"shortDescription"`
	FullDescription  sarifMessage      `json:"fullDescription"`
	Help             sarifMessage      `json:"help"`
	HelpURI          string            `json:"helpUri,omitempty"`
	Default          map[string]string `json:"defaultConfiguration"`
	Properties       map[string]any    `json:"properties"`
}

// Begin implements Writer.
func (s *SARIF) Begin(h *Header) error {
	descs := make([]sarifRule, 0, len(h.Catalogue))
	for _, c := range h.Catalogue {
		req := c.Requirement
		if req == "" {
			req = "none (a Base Protocol profile item or an ahp-tap fact)"
		}
		tags := []string{"ahp", "conformance", strings.ToLower(familyOf(c.ID))}
		if req != "" {
			for _, r := range strings.Split(c.Requirement, ",") {
				if r = strings.TrimSpace(r); r != "" {
					tags = append(tags, r)
				}
			}
		}
		full := c.Description
		if full == "" {
			full = c.Summary
		}
		descs = append(descs, sarifRule{
			ID: c.ID, Name: strings.ReplaceAll(c.ID, "-", ""),
			ShortDescription: sarifMessage{Text: c.Summary},
			FullDescription:  sarifMessage{Text: full},
			Help: sarifMessage{
				Text:     fmt.Sprintf("%s: %s AHP requirement: %s. See %s", c.ID, full, req, rules.CheckHelpURI(c.ID)),
				Markdown: fmt.Sprintf("**%s**: %s\n\nAHP requirement: `%s`. See [the check catalogue](%s).", c.ID, full, req, rules.CheckHelpURI(c.ID)),
			},
			HelpURI:    rules.CheckHelpURI(c.ID),
			Default:    map[string]string{"level": sarifLevel(c.Level)},
			Properties: map[string]any{"tags": tags, "requirement": c.Requirement},
		})
	}
	driver := map[string]any{"name": h.Tool, "version": h.Version, "semanticVersion": semver(h.Version),
		"informationUri": "https://github.com/ahp-tap/ahp-tap", "rules": descs}
	db, err := json.Marshal(driver)
	if err != nil {
		return err
	}
	head := `{"$schema":"https://json.schemastore.org/sarif-2.1.0.json","version":"2.1.0","runs":[{"tool":{"driver":` +
		string(db) + `},"columnKind":"unicodeCodePoints","properties":{"snapshot":` + jsonString(h.Snapshot) + `},"results":[`
	return s.write([]byte(head))
}

// Input implements Writer.
func (s *SARIF) Input(*StreamInput) error { return nil }

// Exchange implements Writer.
func (s *SARIF) Exchange(*Exchange) error { return nil }

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Suppressions        []map[string]any  `json:"suppressions,omitempty"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type sarifLocation struct {
	Physical struct {
		Artifact struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region *struct {
			StartLine int `json:"startLine"`
		} `json:"region,omitempty"`
	} `json:"physicalLocation"`
	Logical []map[string]string `json:"logicalLocations,omitempty"`
}

// Finding implements Writer.
func (s *SARIF) Finding(it *Item) error {
	if s.n >= s.MaxResults || s.cz.n >= s.MaxGzip {
		s.dropped++
		return nil
	}
	f := it.Finding
	r := sarifResult{RuleID: f.Check, Level: sarifLevel(f.Level),
		Message:             sarifMessage{Text: resultText(it)},
		PartialFingerprints: map[string]string{"ahpTapFinding/v1": it.Fingerprint}}
	var loc sarifLocation
	loc.Physical.Artifact.URI = it.URI
	if it.Line > 0 {
		loc.Physical.Region = &struct {
			StartLine int `json:"startLine"`
		}{it.Line}
	}
	if f.Pointer != "" {
		loc.Logical = []map[string]string{{"fullyQualifiedName": f.Pointer, "kind": "member"}}
	}
	r.Locations = []sarifLocation{loc}
	props := map[string]any{}
	if f.Rule != "" {
		props["rule"] = f.Rule
	}
	if f.Requirement != "" {
		props["requirement"] = f.Requirement
	}
	if f.Seq > 0 {
		props["seq"] = f.Seq
		props["direction"] = f.Dir.String()
	}
	if it.EventType != "" {
		props["eventType"] = it.EventType
	}
	if len(props) > 0 {
		r.Properties = props
	}
	if it.Baselined {
		r.Suppressions = []map[string]any{{"kind": "external", "justification": "accepted by the ahp-tap baseline"}}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if s.n > 0 {
		if err := s.write([]byte{','}); err != nil {
			return err
		}
	}
	s.n++
	return s.write(b)
}

// End implements Writer.
func (s *SARIF) End(e *End) error {
	type notification struct {
		Level   string       `json:"level"`
		Message sarifMessage `json:"message"`
	}
	var notes []notification
	if s.dropped > 0 {
		notes = append(notes, notification{Level: "warning", Message: sarifMessage{Text: fmt.Sprintf(
			"%d results left out: GitHub code scanning takes at most %d results and 10 MB gzipped per run; the run had %d",
			s.dropped, s.MaxResults, s.n+s.dropped)}})
	}
	for _, st := range StaleLines(e) {
		notes = append(notes, notification{Level: "error", Message: sarifMessage{Text: st}})
	}
	for _, in := range e.Inputs {
		if in.Injected != "" {
			notes = append(notes, notification{Level: "warning", Message: sarifMessage{Text: InjectedLine(in)}})
		}
	}
	for _, np := range e.NotPossible {
		notes = append(notes, notification{Level: "note", Message: sarifMessage{Text: "not checked: " + np.Check + " (" + np.Reason + ")"}})
	}
	inv := map[string]any{"executionSuccessful": true, "exitCode": 0}
	if e.Failing() {
		inv["exitCode"] = 1
	}
	if len(notes) > 0 {
		inv["toolExecutionNotifications"] = notes
	}
	ib, err := json.Marshal([]any{inv})
	if err != nil {
		return err
	}
	if err := s.write([]byte(`],"invocations":` + string(ib) + "}]}\n")); err != nil {
		return err
	}
	s.gz.Close()
	return s.w.Flush()
}

// Dropped is how many results the caps left out.
func (s *SARIF) Dropped() int { return s.dropped }

func resultText(it *Item) string {
	f := it.Finding
	var b strings.Builder
	b.WriteString(f.Message)
	if f.Pointer != "" {
		b.WriteString(" (at " + f.Pointer + ")")
	}
	if f.Seq > 0 {
		fmt.Fprintf(&b, " [frame #%d from the %s", f.Seq, f.Dir)
		if f.RPCID != "" {
			b.WriteString(", id " + f.RPCID)
		}
		b.WriteString("]")
	}
	return b.String()
}

func sarifLevel(l tap.Level) string {
	switch l {
	case tap.Error:
		return "error"
	case tap.Warn:
		return "warning"
	}
	return "note"
}

func familyOf(id string) string {
	f, _ := splitCheck(id)
	return f
}

// semver turns a version like "0.1.0-dev" into a SARIF semanticVersion
// (it already is one; "" stays "").
func semver(v string) string { return strings.TrimPrefix(v, "v") }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
