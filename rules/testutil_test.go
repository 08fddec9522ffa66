package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// harnessFrame and backendFrame build frames from JSON text.
func harnessFrame(js string) *tap.Frame {
	return &tap.Frame{Dir: tap.FromHarness, Transport: tap.File, Raw: []byte(js)}
}

func backendFrame(js string) *tap.Frame {
	return &tap.Frame{Dir: tap.FromBackend, Transport: tap.File, Raw: []byte(js)}
}

// runRules feeds frames through the given rules in one conversation and
// returns every finding, end-of-stream ones included.
func runRules(cfg tap.Config, rs []tap.Rule, frames ...*tap.Frame) []tap.Finding {
	e := tap.NewEngine(cfg, rs)
	var out []tap.Finding
	for _, f := range frames {
		out = append(out, e.Feed(f)...)
	}
	return append(out, e.Finish()...)
}

// withCheck keeps the findings reported under check.
func withCheck(fs []tap.Finding, check string) []tap.Finding {
	var out []tap.Finding
	for _, f := range fs {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

// dump renders findings for failure messages.
func dump(fs []tap.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

// wantFindings fails the test unless exactly n findings of check were made.
func wantFindings(t *testing.T, fs []tap.Finding, check string, n int) {
	t.Helper()
	if got := withCheck(fs, check); len(got) != n {
		t.Errorf("findings for %s = %d, want %d:%s", check, len(got), n, dump(fs))
	}
}
