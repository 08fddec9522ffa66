package main

import (
	"encoding/json"
	"testing"
)

// The JSON report carries the exchange record: for an accepted edit the
// effective value a conforming harness applies (list merge appends without
// de-duplication), for a rejected one the reasons.
func TestCheckJSONExchangeRecords(t *testing.T) {
	t.Parallel()
	const msg = `{"id":"m1","role":"tool","parts":[{"id":"p1","kind":"text","mediaType":"text/plain","selection":"body","text":"result"}]}`
	ctx := `{"event":"tool.after","current":{"output":[` + msg + `]},"mode":"","action":""}`
	type report struct {
		Exchanges []struct {
			Method string
			Edit   struct {
				Accepted  bool
				Effective map[string][]json.RawMessage
				Reasons   []struct{ Check string }
			}
		}
	}
	parse := func(t *testing.T, out string) report {
		t.Helper()
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("report is not JSON: %v\n%s", err, out)
		}
		if len(r.Exchanges) != 1 {
			t.Fatalf("exchanges = %d, want 1:\n%s", len(r.Exchanges), out)
		}
		return r
	}

	res := runTap(t, "", "check", "--format", "json", "--edit-context", ctx, fixture(t, "http/contextual-tool-output-append.valid.json"))
	if res.code != 0 {
		t.Fatalf("exit code = %d, want 0; stderr %s", res.code, res.stderr)
	}
	x := parse(t, res.stdout).Exchanges[0]
	if !x.Edit.Accepted || len(x.Edit.Effective["output"]) != 2 {
		t.Errorf("edit = %+v, want accepted with two output messages (the current one and the appended duplicate)", x.Edit)
	}

	res = runTap(t, "", "check", "--format", "json", "--edit-context", ctx, fixture(t, "http/contextual-tool-output-object.invalid.json"))
	if res.code != 1 {
		t.Fatalf("exit code = %d, want 1; stderr %s", res.code, res.stderr)
	}
	x = parse(t, res.stdout).Exchanges[0]
	if x.Edit.Accepted || len(x.Edit.Reasons) == 0 || x.Edit.Effective != nil {
		t.Errorf("edit = %+v, want rejected with reasons and no effective value", x.Edit)
	}
}
