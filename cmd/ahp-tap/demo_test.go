package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func selfCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(childBinary, args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

// TestDemo runs `ahp-tap demo`: the session completes, the deny is seen by
// the harness, and the backend's deliberate stdout faults are reported live.
func TestDemo(t *testing.T) {
	t.Parallel()
	out, err := selfCmd("demo").CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"explicit_deny: Blocked by the example policy",
		"no_effect",
		"STDIO-1: the backend wrote non-protocol text to stdout (\"example-backend 1.0 ready",
		"STDIO-1: the backend wrote non-protocol text to stdout (\"[debug]",
		"harness -> backend: 7 frames",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// TestExampleBackendConformingIsClean runs the example harness against the
// conforming example backend wrapped in `ahp-tap stdio`, as a harness's
// registration would: no STDIO finding.
func TestExampleBackendConformingIsClean(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := dir + "/findings.jsonl"
	cmd := selfCmd("example-harness", "--", childBinary, "stdio", "--lifecycle", "persistent", "--log", log, "--",
		childBinary, "example-backend", "--mode", "conforming")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("example-harness: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(log)
	if strings.Contains(string(data), `"STDIO-`) {
		t.Errorf("conforming backend produced STDIO findings:\n%s", data)
	}
}

func TestExampleBackendModes(t *testing.T) {
	t.Parallel()
	req := `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"type":"tool.before","tool":{"name":"Bash","input":{"command":"rm -rf /"}}},"capabilities":{"effects":["deny"]}}}` + "\n"
	cases := map[string]string{
		"conforming":    `"type":"deny"`,
		"banner":        "example-backend 1.0 ready",
		"wrong-version": `"protocolVersion":"2025-01-01"`,
		"unadvertised":  `"type":"modify"`,
		"silent":        "",
	}
	for mode, want := range cases {
		cmd := selfCmd("example-backend", "--mode", mode)
		cmd.Stdin = strings.NewReader(req)
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), want) || (want == "" && len(out) != 0) {
			t.Errorf("--mode %s: %v, output %q, want it to contain %q", mode, err, out, want)
		}
	}
	cmd := selfCmd("example-backend", "--mode", "crash")
	cmd.Stdin = strings.NewReader(req)
	if out, err := cmd.Output(); err == nil || len(out) != 0 {
		t.Errorf("--mode crash: %v, output %q; want exit 1 and no output", err, out)
	}
	if err := selfCmd("example-backend", "--mode", "nonsense").Run(); err == nil {
		t.Errorf("--mode nonsense: no error")
	}
}
