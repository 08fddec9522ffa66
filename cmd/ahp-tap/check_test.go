package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// ownValid is a conforming tool.before intercept request of our own (the
// first frame of the example capture), so these tests need no shared data.
const ownValid = `{"jsonrpc":"2.0","id":"evt-1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{` +
	`"id":"evt-1","source":"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01","type":"tool.before","time":"2026-08-24T08:51:14Z",` +
	`"harness":{"name":"example-harness","version":"2.1.0"},"session":{"id":"sess-7","cwd":"/work/repo"},` +
	`"tool":{"name":"Bash","kind":"shell","input":{"command":"ls -la"},"origin":"native"},"call":{"id":"call-1"},"path":"main"},` +
	`"capabilities":{"effects":["deny"]}}}`

func TestCheckExitCodes(t *testing.T) {
	t.Parallel()
	valid := writeFile(t, "valid.json", ownValid)
	invalid := writeFile(t, "invalid.json", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`)
	if r := runTap(t, "", "check", valid); r.code != 0 {
		t.Errorf("check valid: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runTap(t, "", "check", invalid)
	if r.code != 1 || !strings.Contains(r.stdout, "BASE-1") {
		t.Errorf("check invalid: exit %d, stdout %q; want 1 and a BASE-1 line", r.code, r.stdout)
	}
	// Several files: one invalid makes the run fail.
	if r := runTap(t, "", "check", valid, invalid); r.code != 1 {
		t.Errorf("check valid invalid: exit %d, want 1", r.code)
	}
	// Standard input.
	if r := runTap(t, `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, "check", "-"); r.code != 1 {
		t.Errorf("check - (bad message): exit %d, want 1", r.code)
	}
	// A broken file is a finding, not an I/O error.
	if r := runTap(t, "", "check", writeFile(t, "garbage.json", "not json at all")); r.code != 1 {
		t.Errorf("check garbage: exit %d, want 1", r.code)
	}
}

// TestCheckUpstreamValid is issue 2's done-when: the upstream valid
// intercept request checks clean.
func TestCheckUpstreamValid(t *testing.T) {
	t.Parallel()
	if r := runTap(t, "", "check", fixture(t, "http/intercept-request.valid.json")); r.code != 0 {
		t.Errorf("check intercept-request.valid.json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestCheckGoldenText(t *testing.T) {
	t.Parallel()
	r := runTap(t, "", "check", fixture(t, "http/error-response-result.invalid.json"))
	golden(t, "check-error-response-result.golden", strings.ReplaceAll(r.stdout, sharedAHP, "$AHP"))
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	r := runTap(t, "", "check", "--format", "json", fixture(t, "http/error-response-result.invalid.json"))
	var doc struct {
		Findings []struct {
			Source, Check, Level, Rule string
			Seq                        int
		}
		Summary struct {
			Sources int
			Levels  struct{ Error int }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("check --format json: %v\n%s", err, r.stdout)
	}
	if len(doc.Findings) == 0 || doc.Findings[0].Check != "BASE-1" || doc.Findings[0].Level != "error" ||
		!strings.HasSuffix(doc.Findings[0].Source, "error-response-result.invalid.json") ||
		doc.Summary.Sources != 1 || doc.Summary.Levels.Error == 0 {
		t.Errorf("check --format json = %s", r.stdout)
	}
}

func TestCheckEditContextAccepted(t *testing.T) {
	t.Parallel()
	ctx := `{"event":"tool.after","current":{"output":[]}}`
	if r := runTap(t, "", "check", "--edit-context", ctx, writeFile(t, "valid.json", ownValid)); r.code != 0 {
		t.Errorf("check --edit-context: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestCheckSpec(t *testing.T) {
	t.Parallel()
	spec := sharedAHP
	if r := runTap(t, "", "check", "--spec", spec, fixture(t, "http/intercept-request.valid.json")); r.code != 0 {
		t.Errorf("check --spec valid: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runTap(t, "", "check", "--spec", spec, fixture(t, "http/intercept-request-effects-missing.invalid.json"))
	if r.code != 1 || !strings.Contains(r.stdout, "[SPEC/CAP-1]") {
		t.Errorf("check --spec invalid: exit %d, stdout %q; want 1 and a SPEC/CAP-1 finding", r.code, r.stdout)
	}
}

func TestCheckRegistration(t *testing.T) {
	t.Parallel()
	reg := fixture(t, "registration/portable.valid.json")
	msg := fixture(t, "http/intercept-request.valid.json")
	if r := runTap(t, "", "check", "--registration", reg, "--hook", "com.example.policy", msg); r.code != 0 {
		t.Errorf("check --registration valid: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Two hooks and no --hook: refused, naming them, not ignored.
	if r := runTap(t, "", "check", "--registration", reg, msg); r.code != 2 || !strings.Contains(r.stderr, "com.example.local_review") {
		t.Errorf("check --registration with 2 hooks and no --hook: exit %d, stderr %q; want 2 naming the hooks", r.code, r.stderr)
	}
	// A registration is recognised as a FILE too.
	if r := runTap(t, "", "check", reg); r.code != 0 {
		t.Errorf("check registration: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runTap(t, "", "check", "--registration", writeFile(t, "reg.json", "{"), msg); r.code != 2 {
		t.Errorf("check --registration (not JSON): exit %d, want 2", r.code)
	}
}
