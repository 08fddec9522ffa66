package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayCutOffCapture records a real stdio session (three answered
// requests and a notification), then replays the capture cut after every
// record, as a killed recorder leaves it: each cut copy gives exactly one
// TAP-1 naming the last frame and no CORR-2 error (before, every request
// whose answer fell after the cut was "never answered"), while the whole
// capture, with its end record, gives neither.
func TestReplayCutOffCapture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	capPath := filepath.Join(dir, "cap.jsonl")
	cmd := stdioTap([]string{"--lifecycle", "persistent", "--capture", capPath})
	in := intercept("e1", "ls") + "\n" + intercept("e2", "ls") + "\n" + intercept("e3", "ls") + "\n" +
		`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}` + "\n"
	cmd.Stdin = strings.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ahp-tap stdio: %v\n%s", err, out)
	}
	data, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	if !strings.Contains(lines[0], `"endRecord":true`) || !strings.Contains(lines[len(lines)-1], `"kind":"end"`) {
		t.Fatalf("capture has no end promise or no end record:\n%s", data)
	}

	replay := func(capture string) (tap1, corr2 []map[string]any) {
		t.Helper()
		p := filepath.Join(dir, "cut.jsonl")
		logPath := filepath.Join(dir, "cut.log")
		os.Remove(logPath)
		if err := os.WriteFile(p, []byte(capture), 0o600); err != nil {
			t.Fatal(err)
		}
		rc := exec.Command(tapBinary, "replay", "--fail-on", "never", "--log", logPath, p)
		if out, err := rc.CombinedOutput(); err != nil {
			t.Fatalf("replay: %v\n%s", err, out)
		}
		b, _ := os.ReadFile(logPath)
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var m map[string]any
			if len(l) == 0 || json.Unmarshal(l, &m) != nil {
				continue
			}
			switch {
			case m["check"] == "TAP-1":
				tap1 = append(tap1, m)
			case m["check"] == "CORR-2" && m["level"] == "error":
				corr2 = append(corr2, m)
			}
		}
		return tap1, corr2
	}

	tap1, corr2 := replay(string(data))
	if len(tap1) != 0 {
		t.Errorf("whole capture: TAP-1 %v, want none", tap1)
	}
	if len(corr2) != 0 {
		t.Errorf("whole capture: CORR-2 errors %v; every request was answered", corr2)
	}
	cuts := 0
	for k := 1; k < len(lines)-1; k++ { // header + k-1 records; the end record is never kept
		cut := strings.Join(lines[:k], "")
		if !strings.Contains(cut, `"type":"frame"`) {
			continue // no frame yet: replay refuses an input without one (exit 2)
		}
		tap1, corr2 := replay(cut)
		if len(corr2) != 0 {
			t.Errorf("cut after line %d: CORR-2 errors %v", k, corr2)
		}
		if len(tap1) != 1 {
			t.Errorf("cut after line %d: %d TAP-1, want 1: %v", k, len(tap1), tap1)
			continue
		}
		msg, _ := tap1[0]["message"].(string)
		if !strings.Contains(msg, "cut off") {
			t.Errorf("cut after line %d: TAP-1 %q does not say the capture is cut off", k, msg)
		}
		var last struct {
			Type string  `json:"type"`
			Seq  float64 `json:"seq"`
		}
		for _, l := range lines[1:k] {
			var r struct {
				Type string  `json:"type"`
				Seq  float64 `json:"seq"`
			}
			if json.Unmarshal([]byte(l), &r) == nil && r.Type == "frame" {
				last = r
			}
		}
		if last.Type == "frame" && tap1[0]["seq"] != last.Seq {
			t.Errorf("cut after line %d: TAP-1 names frame #%v, want the last recorded #%v", k, tap1[0]["seq"], last.Seq)
		}
		cuts++
	}
	if cuts < 6 {
		t.Fatalf("only %d cuts tried; the capture is shorter than the session:\n%s", cuts, data)
	}
}
