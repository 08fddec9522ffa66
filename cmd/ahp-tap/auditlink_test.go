package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdioWorldWritableStateStillAudits (issue 28 item 7): a --state
// directory every user may write to is refused with one line and not used,
// but the audit still runs: the log and the capture are written, and the
// state directory gets no event file.
func TestStdioWorldWritableStateStillAudits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	backend := writeScript(t, dir)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "c.jsonl")
	stderr := runEvent(t, intercept("e10", "ls"), []string{"--lifecycle", "per_event", "--state", state,
		"--log", logPath, "--capture", capPath, "--summary=false"}, backend) // a wrong-id answer: CORR-2
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "--state") || !strings.Contains(lines[0], "not used") {
		t.Errorf("stderr %q, want one line refusing --state", stderr)
	}
	logData, _ := os.ReadFile(logPath)
	if !strings.Contains(string(logData), `"check":"CORR-2"`) {
		t.Errorf("the log lacks the event's CORR-2:\n%s", logData)
	}
	capData, _ := os.ReadFile(capPath)
	if strings.Count(string(capData), `"type":"frame"`) < 2 || !strings.Contains(string(capData), `"kind":"end"`) {
		t.Errorf("the capture lacks the event's frames or its end:\n%s", capData)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("the refused state directory was used: %v", ents)
	}
}
