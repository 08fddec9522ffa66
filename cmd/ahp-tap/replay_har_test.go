package main

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// harTestdata holds the HARs mitmproxy wrote and the equivalent capture
// (har/testdata/make.sh).
const harTestdata = "../../har/testdata"

// replayFindings replays files with the binary and returns each finding
// as one comparable line (what, where, why; not the connection or time).
func replayFindings(t *testing.T, args ...string) ([]string, result) {
	t.Helper()
	r := runTap(t, "", append([]string{"replay", "--fail-on", "never", "--format", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("replay %v: exit %d: %s", args, r.code, r.stderr)
	}
	var rep struct {
		Findings []struct {
			Check, Rule, Level, Pointer, Message, Direction, RPCID, EventID string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range rep.Findings {
		out = append(out, strings.Join([]string{f.Check, f.Rule, f.Level, f.Pointer, f.Direction, f.RPCID, f.EventID, f.Message}, " | "))
	}
	sort.Strings(out)
	return out, r
}

// TestReplayHARMatchesTheCapture: the HAR mitmproxy recorded, and the same
// HAR with base64 bodies, replay to exactly the findings of the capture
// ahp-tap http recorded of the same requests; the HAR's non-AHP entries
// are counted and make no finding. Recognised by content and by --input.
func TestReplayHARMatchesTheCapture(t *testing.T) {
	t.Parallel()
	want, _ := replayFindings(t, filepath.Join(harTestdata, "session.capture"))
	if len(want) < 4 {
		t.Fatalf("the capture replays to only %d findings; make.sh's backend has more faults", len(want))
	}
	for _, args := range [][]string{
		{filepath.Join(harTestdata, "mitmproxy.har")},
		{filepath.Join(harTestdata, "mitmproxy-base64.har")},
		{"--input", "har", filepath.Join(harTestdata, "mitmproxy.har")},
	} {
		got, r := replayFindings(t, args...)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("replay %v:\n%s\nwant the capture's:\n%s", args, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !strings.Contains(r.stderr, "9 entries: 7 AHP exchanges audited, 2 other entries skipped") {
			t.Errorf("replay %v: stderr %q lacks the entry counts", args, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, "har-test-token") {
			t.Errorf("replay %v printed the bearer token", args)
		}
	}
	if r := runTap(t, "", "replay", "--input", "pcap", "x"); r.code != 2 {
		t.Errorf("--input pcap: exit %d, want 2", r.code)
	}
}
