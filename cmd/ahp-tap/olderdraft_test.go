package main

import (
	"strings"
	"testing"
)

// check on traffic from an SDK pinned to the 0.1 revision: the findings
// stay errors, the first one says why, and the summary has a line; the
// same traffic from a current SDK has neither (issue 12).
func TestCheckOlderDraftHint(t *testing.T) {
	t.Parallel()
	const current = `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":{"id":"e1","source":"urn:test:h","type":"tool.before","time":"2026-09-15T12:00:00Z","harness":{"name":"h","version":"1"},"call":{"id":"c1"},"tool":{"name":"Bash","input":{},"origin":"native"},"path":"native"}}}`
	old := strings.Replace(strings.Replace(current, `"draft"`, `"0.1"`, 1), `"origin":"native"}`, `"origin":"native","callId":"c1"}`, 1)
	r := runTap(t, old+"\n", "check", "-")
	if r.code != 1 {
		t.Fatalf("check(0.1 traffic): exit %d, want 1; stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stdout, "SDK may pin an older schema revision"); n != 2 {
		t.Errorf("check(0.1 traffic) mentions the older revision %d times, want 2 (one finding, one summary line):\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, "error BASE-2") || !strings.Contains(r.stdout, "error EVT-1") ||
		!strings.Contains(r.stdout, "  older draft: some findings match shapes of the 0.1 revision") {
		t.Errorf("check(0.1 traffic) output:\n%s", r.stdout)
	}
	r = runTap(t, current+"\n", "check", "-")
	if r.code != 0 || strings.Contains(r.stdout, "older") {
		t.Errorf("check(current traffic): exit %d, output:\n%s", r.code, r.stdout)
	}
}
