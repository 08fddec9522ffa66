package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestProgressBar(t *testing.T) {
	// replay's stderr in tests is a pipe: no bar, whatever the input size.
	r := runTap(t, "", "replay", "--fail-on", "never", exampleCapture)
	if strings.Contains(r.stderr, "%") {
		t.Errorf("replay drew a progress bar on a pipe: %q", r.stderr)
	}
}

// On a real terminal (script(1) gives the run a pseudo-terminal) a replay
// draws the bar on stderr, with the bytes read of the file's size and the
// frame rate; --quiet turns it off.
func TestReplayProgressOnTerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give the run a terminal")
	}
	// 8,000 frames of ~1 KiB, enough for the bar to draw twice at least.
	var b strings.Builder
	b.WriteString(`{"type":"header","format":"ahp-tap-capture","version":1,"tool":"ahp-tap test","snapshot":"draft","transport":"stdio","conn":"stdio:1"}` + "\n")
	pad := strings.Repeat("x", 1000)
	for i := 1; i <= 4000; i++ {
		fmt.Fprintf(&b, `{"type":"frame","seq":%d,"direction":"harness","transport":"stdio","conn":"stdio:1","raw":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"x/%s\"}"}`+"\n", 2*i-1, i, pad)
		fmt.Fprintf(&b, `{"type":"frame","seq":%d,"direction":"backend","transport":"stdio","conn":"stdio:1","raw":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}"}`+"\n", 2*i, i)
	}
	capPath := writeFile(t, "big.capture", b.String())
	run := func(extra string) string {
		typescript := filepath.Join(t.TempDir(), "typescript")
		cmd := exec.Command(scriptBin, "-qfec", tapBinary+" replay --fail-on never"+extra+" "+capPath+" >/dev/null", typescript)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("script: %v\n%s", err, out)
		}
		data, err := os.ReadFile(typescript)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	out := run("")
	size := fmt.Sprintf("/%.1f MB", float64(len(b.String()))/1e6)
	if !strings.Contains(out, "%") || !strings.Contains(out, size) {
		t.Errorf("replay on a terminal drew no bar with %q: %q", size, out)
	}
	if out := run(" --quiet"); strings.Contains(out, "%") {
		t.Errorf("replay --quiet drew a bar: %q", out)
	}
}
