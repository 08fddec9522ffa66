package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// TestWriteJSONStreamedAsEncoded: the streamed JSON report is byte for
// byte what encoding/json writes for the whole JSONReport, with and
// without header, exchanges and summary, and with HTML characters and
// nested values (issue 21 item 3: the report is no longer built whole).
func TestWriteJSONStreamedAsEncoded(t *testing.T) {
	fd := tap.Finding{Check: "BASE-2", Level: tap.Error, Message: `a <b> & "c"`, Pointer: "/result/protocolVersion",
		Seq: 4, Dir: tap.FromBackend, Conn: "stdio:1", Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	x := tap.ExchangeRecord{Conn: "stdio:1", RPCID: `"e1"`, Method: "hooks/intercept", Outcome: "effects",
		Edit: map[string]any{"targets": []any{map[string]any{"path": "/tool/input", "value": "<x>"}}}}
	srcs := []Source{
		{Name: "a.capture", Findings: []tap.Finding{fd, fd}, Exchanges: []tap.ExchangeRecord{x}},
		{Name: "b.jsonl"},
		{Name: "c.json", Findings: []tap.Finding{fd}, Exchanges: []tap.ExchangeRecord{x, x}},
	}
	h := &JSONHeader{Tool: "ahp-tap", Version: "t", Snapshot: "draft", Inputs: []JSONInput{{Name: "a", Frames: 3}}}
	for _, tc := range []struct {
		name string
		h    *JSONHeader
		srcs []Source
		sum  *Summary
	}{
		{"everything", h, srcs, SummaryOf(srcs)},
		{"no header", nil, srcs, SummaryOf(srcs)},
		{"no summary", h, srcs, nil},
		{"nothing found", h, srcs[1:2], SummaryOf(srcs[1:2])},
		{"no sources", nil, nil, nil},
	} {
		doc := JSONReport{Header: tc.h, Findings: []JSONFinding{}, Summary: tc.sum}
		for _, src := range tc.srcs {
			for _, f := range src.Findings {
				doc.Findings = append(doc.Findings, JSONFinding{Source: src.Name, Finding: f})
			}
			for _, x := range src.Exchanges {
				doc.Exchanges = append(doc.Exchanges, JSONExchange{Source: src.Name, ExchangeRecord: x})
			}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteJSONWithHeader(&got, tc.h, tc.srcs, tc.sum); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: streamed report differs:\ngot:\n%s\nwant:\n%s", tc.name, got.String(), want.String())
		}
	}
}
