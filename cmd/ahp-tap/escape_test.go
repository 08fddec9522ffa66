package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/ahp-tap/ahp-tap/httptap"
)

// Issue 28 item 2: what the wire carries (keys, effect types, methods, ids,
// event types) or a file holds (a hook id, a log) cannot reach a terminal
// or a CI log as a control sequence or a workflow command.
var escapePayloads = []string{
	"\x1b]0;pwned\x07",           // OSC 0: retitle the terminal
	"\x1b[2J",                    // clear the screen
	"\x1b]52;c;cHduZWQ=\x07",     // OSC 52: write the clipboard
	"\n::error::injected",        // a GitHub Actions annotation
	"\n::add-mask::secret",       // masking
	"\r\n  ::stop-commands::tok", // blanks before the command
	"##[add-mask]v1secret",       // the runner's older syntax
	"\u009b2J\u0085",             // C1 CSI and NEL
	"\u202eevil\u2066",           // bidi overrides
}

var escapePayload = strings.Join(escapePayloads, "")

// assertPrintable fails when out holds ESC, BEL, any other C0 control but
// "\n", DEL, a C1 control, a bidi override or a line that a GitHub runner
// takes for a workflow command (our own, matching ownCommands, aside).
func assertPrintable(t *testing.T, what, out string, ownCommands *regexp.Regexp) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		if c := out[i]; (c < 0x20 && c != '\n') || c == 0x7f {
			t.Errorf("%s: byte %#x at %d: %q", what, c, i, around(out, i))
			return
		}
	}
	for i, r := range out {
		if (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029 {
			t.Errorf("%s: %U at %d: %q", what, r, i, around(out, i))
			return
		}
	}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if strings.Contains(line, "##[") {
			t.Errorf("%s: a line holds ##[: %q", what, line)
		}
		cmd := strings.TrimLeftFunc(line, unicode.IsSpace)
		if strings.HasPrefix(cmd, "::") && (ownCommands == nil || !ownCommands.MatchString(cmd)) {
			t.Errorf("%s: a line starts a workflow command: %q", what, line)
		}
	}
}

// assertReadable checks that what was neutralised is still there to read.
func assertReadable(t *testing.T, what, out string) {
	t.Helper()
	for _, want := range []string{`\x1b]0;pwned\x07`, `\n::error::injected`, `\u009b2J`, `\u202eevil`} {
		if !strings.Contains(out, want) {
			t.Errorf("%s: the output does not show %s:\n%s", what, want, out)
		}
	}
}

func around(s string, i int) string {
	lo, hi := max(0, i-40), min(len(s), i+40)
	return s[lo:hi]
}

// evilTraffic is a stdio link whose every name holds the payloads: the
// harness's requests (event type, extension key, ids, method, a line that
// is not JSON with raw controls), and the backend's answer (effect type,
// an unknown member's key).
func evilTraffic(t *testing.T) (harness, answer string) {
	t.Helper()
	p := escapePayload
	event := func(id, typ string) map[string]any {
		return map[string]any{"id": id, "source": "urn:x", "type": typ, "time": "2026-08-24T08:51:14Z",
			"harness": map[string]any{"name": "h", "version": "1"}, "session": map[string]any{"id": "s", "cwd": "/r", "workspaceRoots": []string{"/r"}},
			"tool": map[string]any{"name": "Bash", "kind": "shell", "input": map[string]any{"command": "x"}, "origin": "native"}, "call": map[string]any{"id": "c"},
			"extensions": map[string]any{p: map[string]any{"x": 1}}}
	}
	msgs := []any{
		map[string]any{"jsonrpc": "2.0", "id": "e1", "method": "hooks/intercept", "params": map[string]any{"protocolVersion": "draft", "event": event("e1"+p, "tool.before"), "capabilities": map[string]any{"effects": []string{"deny"}}}},
		map[string]any{"jsonrpc": "2.0", "id": "e2" + p, "method": "hooks/intercept", "params": map[string]any{"protocolVersion": "draft", "event": event("e2", "tool."+p), "capabilities": map[string]any{"effects": []string{"deny"}}}},
		map[string]any{"jsonrpc": "2.0", "id": "e3", "method": "hooks/" + p, "params": map[string]any{}},
	}
	var b strings.Builder
	for _, m := range msgs {
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteString("\n")
	}
	// Not JSON: raw controls and bytes that are not UTF-8 on the wire.
	b.WriteString("{\"jsonrpc\":\"2.0\",\"method\":\"\x1b]0;pwned\x07\xff\x9b2J\",\"id\":\"x\x1b[2J\"}\n")
	ans, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "e1", "result": map[string]any{"protocolVersion": "draft", "effects": []any{map[string]any{"type": p}}, p: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), string(ans)
}

func TestPrintedLinesNeutraliseEscapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	harness, answer := evilTraffic(t)

	// check of the traffic as a file (the default text report).
	stream := filepath.Join(dir, "evil.jsonl")
	if err := os.WriteFile(stream, []byte(harness+answer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runTap(t, "", "check", stream)
	if r.code != 1 {
		t.Fatalf("check: exit %d, want 1 (findings)\n%s", r.code, r.stderr)
	}
	assertPrintable(t, "check stdout", r.stdout, nil)
	assertPrintable(t, "check stderr", r.stderr, nil)
	assertReadable(t, "check", r.stdout)

	// The live stdio tap with --console, recording a capture and a log.
	capPath, logPath := filepath.Join(dir, "evil.capture"), filepath.Join(dir, "evil.log")
	cmd := exec.Command(tapBinary, "stdio", "--console", "--capture", capPath, "--log", logPath, "--lifecycle", "persistent",
		"--", childBinary, "helper", "answer", answer)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Stdin = strings.NewReader(harness)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("stdio: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), answer) {
		t.Errorf("stdio: the backend's answer was not forwarded unchanged:\n%q", stdout.String())
	}
	assertPrintable(t, "stdio --console stderr", stderr.String(), nil)
	assertReadable(t, "stdio --console", stderr.String())

	// replay of the capture: text, and the GitHub workflow commands.
	r = runTap(t, "", "replay", capPath)
	assertPrintable(t, "replay stdout", r.stdout, nil)
	assertPrintable(t, "replay stderr", r.stderr, nil)
	assertReadable(t, "replay", r.stdout)
	// ahp-tap's own commands: annotations always carry properties, so
	// "::error::injected" is not one of them.
	own := regexp.MustCompile(`^::(group::|endgroup::$|(error|warning|notice) [^:]+::)`)
	r = runTap(t, "", "replay", "--report", "github", capPath)
	assertPrintable(t, "replay --report github stdout", r.stdout, own)
	assertPrintable(t, "replay --report github stderr", r.stderr, nil)
	if !strings.Contains(r.stdout, `\x1b]0;pwned\x07`) {
		t.Errorf("replay --report github: the payload is not shown escaped:\n%s", r.stdout)
	}
	for line := range strings.Lines(r.stdout) {
		if own.MatchString(line) && strings.HasPrefix(line, "::error ") && !regexp.MustCompile(`^::error file=[^:]*,title=[A-Z]+-[0-9]+::`).MatchString(line) {
			t.Errorf("replay --report github: annotation properties not escaped: %q", line)
		}
	}

	// The structured reports escape by their encoders: no raw control
	// byte in any file, and JUnit (XML 1.0 cannot carry ESC at all) shows
	// the payload escaped rather than as U+FFFD.
	files := map[string]string{}
	args := []string{"replay", "--report", "text"}
	for _, f := range []string{"junit", "sarif", "json", "html", "github"} {
		files[f] = filepath.Join(dir, "r."+f)
		args = append(args, "--report", f+"="+files[f])
	}
	r = runTap(t, "", append(args, capPath)...)
	assertPrintable(t, "replay --report text stdout", r.stdout, nil)
	for f, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s report: %v", f, err)
		}
		// C0 controls only: encoding/json leaves C1 and bidi characters
		// as they are, which is valid JSON, and the file is for programs.
		if i := bytes.IndexFunc(data, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }); i >= 0 {
			t.Errorf("%s report: a raw control at %d: %q", f, i, around(string(data), i))
		}
	}
	junit, _ := os.ReadFile(files["junit"])
	var suites struct {
		Suites []struct {
			Cases []struct {
				Failure *struct {
					Text string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(junit, &suites); err != nil {
		t.Fatalf("the JUnit report is not XML: %v", err)
	}
	var failures strings.Builder
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				failures.WriteString(c.Failure.Text)
			}
		}
	}
	assertPrintable(t, "JUnit failure text", failures.String(), nil)
	assertReadable(t, "JUnit failure text", failures.String())
	if strings.Contains(failures.String(), "\ufffd") || strings.ContainsRune(failures.String(), utf8.RuneError) {
		t.Errorf("JUnit: controls became U+FFFD:\n%s", failures.String())
	}

	// tail of the violation log, and of a log whose records were forged.
	r = runTap(t, "", "tail", logPath)
	if r.code != 0 || r.stdout == "" {
		t.Fatalf("tail: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	assertPrintable(t, "tail stdout", r.stdout, nil)
	assertReadable(t, "tail", r.stdout)
	forged, err := json.Marshal(map[string]any{"check": "BASE-1" + escapePayload, "level": "error", "message": escapePayload, "pointer": "/" + escapePayload,
		"seq": 1, "direction": "harness", "conn": "::error::conn" + escapePayload, "time": "2026-01-01T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	forgedLog := filepath.Join(dir, "::error::forged.log")
	if err := os.WriteFile(forgedLog, append(forged, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runTap(t, "", "tail", forgedLog, logPath)
	assertPrintable(t, "tail of a forged log", r.stdout+r.stderr, nil)
	r = runTap(t, "", "tail", "--color", "always", forgedLog)
	// With colour, the only ESC sequences are the colour's own.
	colourless := regexp.MustCompile("\x1b\\[(1;31|33|36|0)m").ReplaceAllString(r.stdout, "")
	assertPrintable(t, "tail --color always", colourless, nil)

	// mock backend: a request the recording does not have is named on
	// the "unmatched" line.
	mc := exec.Command(tapBinary, "mock", "backend", "--stdio", "--fail-on", "never", capPath)
	mc.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":` + mustJSON(t, "z"+escapePayload) + `,"method":"hooks/intercept","params":{"protocolVersion":"draft",` +
		`"event":{"id":"z","type":` + mustJSON(t, "tool.other"+escapePayload) + `},"capabilities":{"effects":["deny"]}}}` + "\n")
	stdout.Reset()
	stderr.Reset()
	mc.Stdout, mc.Stderr = &stdout, &stderr
	_ = mc.Run()
	if !strings.Contains(stderr.String(), "unmatched: ") {
		t.Errorf("mock backend: no unmatched line:\n%s", stderr.String())
	}
	assertPrintable(t, "mock backend stderr", stderr.String(), nil)
	assertReadable(t, "mock backend", stderr.String())

	// mock harness: a backend whose answers differ from the recording in
	// keys and values holding the payloads.
	other := strings.ReplaceAll(answer, `"draft"`, mustJSON(t, "v"+escapePayload))
	mh := exec.Command(tapBinary, "mock", "harness", "--fail-on", "never", capPath, "--", childBinary, "helper", "answer", other)
	mh.Env = append(os.Environ(), mainEnv+"=1")
	stdout.Reset()
	stderr.Reset()
	mh.Stdout, mh.Stderr = &stdout, &stderr
	_ = mh.Run()
	if !strings.Contains(stderr.String(), "difference") {
		t.Errorf("mock harness: no difference line:\n%s", stderr.String())
	}
	assertPrintable(t, "mock harness stderr", stdout.String()+stderr.String(), nil)
	assertReadable(t, "mock harness", stderr.String())

	// wrap and unwrap name each hook of a registration on a line.
	reg := filepath.Join(dir, "hooks.json")
	doc := `{"protocolVersion":"draft","hooks":[{"id":` + mustJSON(t, "com.example.policy"+escapePayload) +
		`,"transport":{"type":"http","url":"https://policy.example.com/agent-hooks"},"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":750,"failurePolicy":"fail-closed"}]},` +
		`{"id":"com.example.other","transport":{"type":` + mustJSON(t, "grpc"+escapePayload) + `},"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":750,"failurePolicy":"fail-closed"}]}]}`
	if err := os.WriteFile(reg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runTap(t, "", "unwrap", reg)
	if r.code != 0 || !strings.Contains(r.stderr, "not wrapped") {
		t.Fatalf("unwrap: exit %d, stderr %q", r.code, r.stderr)
	}
	assertPrintable(t, "unwrap stderr", r.stderr, nil)
	assertReadable(t, "unwrap", r.stderr)
	r = runTap(t, "", "wrap", "--dir", filepath.Join(dir, "logs"), "-o", filepath.Join(dir, "wrapped.json"), reg)
	assertPrintable(t, "wrap stderr", r.stderr, nil)
}

func mustJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil || !utf8.Valid(b) {
		t.Fatal(err)
	}
	return string(b)
}

// The HTTP tap's diagnostic log: message, field names and values (strings
// and objects) from the wire come out printable.
func TestHTTPDiagnosticsPrintable(t *testing.T) {
	var out bytes.Buffer
	log := zerolog.New(httptap.PrintableConsole(&out)).With().Str("tap", "http").Logger()
	log.Warn().Str("upstream", "http://x/"+escapePayload).Strs("hosts", []string{escapePayload}).
		Str(escapePayload, "v").Err(errors.New("dial " + escapePayload)).Msg("upstream failed: " + escapePayload)
	assertPrintable(t, "diagnostic log", out.String(), nil)
	assertReadable(t, "diagnostic log", out.String())
	if !strings.Contains(out.String(), "upstream failed: ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("diagnostic log line: %q", out.String())
	}
}
