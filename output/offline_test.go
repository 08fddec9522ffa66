package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

func TestOfflineFinishExitStatus(t *testing.T) {
	finding := tap.TapIncomplete.At(nil, tap.Error, "", "a finding")
	clean := report.Source{Name: "a.jsonl", Input: &report.Input{Name: "a.jsonl", Kind: "stream", Frames: 2}}
	found := report.Source{Name: "b.jsonl", Findings: []tap.Finding{finding}, Input: &report.Input{Name: "b.jsonl", Kind: "stream", Frames: 2}}
	damaged := report.Source{Name: "c.jsonl", Input: &report.Input{Name: "c.jsonl", Kind: "stream", Damaged: 1}}
	for _, c := range []struct {
		name      string
		sources   []report.Source
		threshold tap.Level
		code      int
		msg       string
	}{
		{"clean", []report.Source{clean}, tap.Error, 0, ""},
		{"finding", []report.Source{clean, found}, tap.Error, 1, ""},
		{"finding, never fail", []report.Source{found}, 0, 0, ""},
		{"damaged", []report.Source{clean, damaged}, tap.Error, 2, "check: 1 of 2 inputs not checked whole (see above)"},
		{"both", []report.Source{found, damaged}, tap.Error, 3, "check: 1 of 2 inputs not checked whole (see above)"},
	} {
		var out, errb bytes.Buffer
		code, msg, err := Offline{Cmd: "check", Format: "json", Stdout: &out, Stderr: &errb, Threshold: c.threshold}.Finish(c.sources, nil)
		if err != nil || code != c.code || msg != c.msg {
			t.Errorf("%s: Finish = %d, %q, %v; want %d, %q", c.name, code, msg, err, c.code, c.msg)
		}
		var doc map[string]any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Errorf("%s: the JSON report does not parse: %v\n%s", c.name, err, out.String())
		}
	}
	var out bytes.Buffer
	if _, _, err := (Offline{Cmd: "replay", Format: "text", Stdout: &out, Stderr: &out}).Finish([]report.Source{found}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "b.jsonl: ") {
		t.Errorf("the text report lacks the finding's line:\n%s", out.String())
	}
}
