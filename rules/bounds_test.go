package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/norace"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Issue 8 item 6: a 2 MB request whose params hold 200,000 duplicate keys
// goes through every rule and reports the first tap.MaxDuplicateKeys of them
// and one count of the rest, not 199,999 findings.
func TestDuplicateKeysFindingSet(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	const n = 200_000
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":"1","method":"hooks/intercept","params":{`)
	for range n {
		b.WriteString(`"xxxxxxx":1,`)
	}
	b.WriteString(`"protocolVersion":"draft","event":` + eventJS("tool.before", minimalPayloads["tool.before"]) + `,"capabilities":{"effects":["deny"]}}}`)
	fs := runRules(tap.Config{}, Default(Options{}), harnessFrame(b.String()))
	base1 := withCheck(fs, "BASE-1")
	if len(base1) != tap.MaxDuplicateKeys+1 {
		t.Fatalf("BASE-1 findings = %d, want %d", len(base1), tap.MaxDuplicateKeys+1)
	}
	if last := base1[len(base1)-1]; !strings.Contains(last.Message, "199899 more duplicate object keys") {
		t.Errorf("last BASE-1 finding = %q, want a count of the 199899 others", last.Message)
	}
	if base1[0].Pointer != "/params/xxxxxxx" {
		t.Errorf("first BASE-1 finding at %q, want /params/xxxxxxx", base1[0].Pointer)
	}
	if len(withCheck(fs, "TAP-1")) != 0 {
		t.Errorf("findings %s: want no TAP-1 (the frame is within the bounds)", dump(withCheck(fs, "TAP-1")))
	}
}

// JSON embedded in a text part (an MCP elicitation payload) is held to the
// same value bound as a frame: past it, it is left unchecked rather than
// decoded into hundreds of megabytes.
func TestEmbeddedJSONBound(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	if norace.Run(t) {
		return
	}
	over := "[" + strings.TrimSuffix(strings.Repeat("0,", tap.MaxFrameValues), ",") + "]"
	if v, faults := parseMCP(over); v != nil || faults != nil {
		t.Errorf("parseMCP(%d values) = %v, %v; want nothing (unchecked)", tap.MaxFrameValues+1, v != nil, faults)
	}
	if _, faults := parseMCP(`{"a":1,"a":2}`); len(faults) != 1 {
		t.Errorf("parseMCP(duplicate key) faults = %v, want one", faults)
	}
	if _, faults := parseMCP(`{"a":`); len(faults) != 1 {
		t.Errorf("parseMCP(truncated) faults = %v, want one", faults)
	}
}
