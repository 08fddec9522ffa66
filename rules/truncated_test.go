package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// truncate returns f as a truncated audit copy holding only its first n bytes.
func truncate(f *tap.Frame, n int) *tap.Frame {
	f.Size = len(f.Raw)
	f.Raw = f.Raw[:n]
	f.Truncated = true
	return f
}

// A request or answer the tap audited only as a prefix is never turned into
// a CORR-2 error about traffic the tap did not see (issue 15 item 1).
func TestTruncatedFramesPairWithoutFalseCorr2(t *testing.T) {
	big := convIntercept("evt_big", convEvent("evt_big", "tool.before", `,"pad":"`+string(make([]byte, 0))+`xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"`), denyCaps)
	// The prefix holds the id, the method and the event's id and type.
	prefix := len(`{"jsonrpc":"2.0","id":"evt_big","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"evt_big","source":"x","type":"tool.before"`)
	idLate := `{"jsonrpc":"2.0","method":"hooks/intercept","params":{"protocolVersion":"draft","event":` + convEvent("evt_late", "tool.before", "") + `},"id":"evt_late"}`
	tests := []struct {
		name     string
		frames   []*tap.Frame
		corr2    int // CORR-2 findings at error level
		corr2Inf int // CORR-2 findings at info level
		outcome  string
	}{
		{"truncated request, whole answer", []*tap.Frame{
			truncate(harnessFrame(big), prefix), backendFrame(convError("evt_big", -32600))}, 0, 0, tap.OutcomeNotAudited},
		{"truncated request, id after the cut", []*tap.Frame{
			truncate(harnessFrame(idLate), 40), backendFrame(convResult("evt_late", `[]`))}, 0, 0, ""},
		{"whole request, truncated answer with id", []*tap.Frame{
			harnessFrame(big), truncate(backendFrame(convResult("evt_big", `[{"type":"deny","reason":"a long reason"}]`)), 40)}, 0, 0, tap.OutcomeNotAudited},
		{"whole request, truncated answer without id", []*tap.Frame{
			harnessFrame(big), truncate(backendFrame(`{"jsonrpc":"2.0","result":{"protocolVersion":"draft","effects":[]},"id":"evt_big"}`), 30)}, 0, 1, tap.OutcomeNotAudited},
		{"truncated request sent twice, both answered", []*tap.Frame{
			truncate(harnessFrame(big), prefix), truncate(harnessFrame(big), prefix),
			backendFrame(convError("evt_big", -32600)), backendFrame(convError("evt_big", -32600))}, 0, 0, tap.OutcomeNotAudited},
		// Still found: an answer with an id no request had, and a request
		// (truncated, id known) nothing answered.
		{"truncated request, answer to another id", []*tap.Frame{
			truncate(harnessFrame(big), prefix), backendFrame(convResult("other", `[]`))}, 2, 0, tap.OutcomeUnanswered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs, fs := exchangesOf(tap.Config{Transport: tap.Stdio}, Default(Options{}), tt.frames...)
			var errs, infos int
			for _, f := range withCheck(fs, "CORR-2") {
				if f.Level == tap.Error {
					errs++
				} else if f.Level == tap.Info {
					infos++
				}
			}
			if errs != tt.corr2 || infos != tt.corr2Inf {
				t.Errorf("CORR-2 errors %d, infos %d; want %d, %d:%s", errs, infos, tt.corr2, tt.corr2Inf, dump(fs))
			}
			if len(withCheck(fs, "TAP-1")) == 0 {
				t.Errorf("no TAP-1 for the truncated frame:%s", dump(fs))
			}
			if tt.outcome != "" && (len(xs) == 0 || xs[0].Outcome != tt.outcome) {
				t.Errorf("exchanges %+v, want the first with outcome %s", xs, tt.outcome)
			}
		})
	}
}

func TestScanPrefix(t *testing.T) {
	raw := []byte(`{"jsonrpc":"2.0","id":7,"method":"hooks/intercept","params":{"a":[1,{"id":"no"}],"event":{"id":"e\"1","type":"tool.bef`)
	pf := tap.ScanPrefix(raw)
	if tap.IDText(pf.ID) != "7" || pf.Method != "hooks/intercept" || pf.EventID != `e"1` || pf.EventType != "" {
		t.Errorf("ScanPrefix = %+v (id %s)", pf, tap.IDText(pf.ID))
	}
	if pf := tap.ScanPrefix([]byte(`{"id":12`)); pf.ID != nil {
		t.Errorf("a number cut off at the end was read as %s", tap.IDText(pf.ID))
	}
}

// A request never answered is reported about the harness's frame as the
// backend's duty; the text says both, and who sent a guessed frame
// (issue 15 item 7).
func TestSenderAndBoundRole(t *testing.T) {
	req := harnessFrame(convIntercept("e1", convEvent("e1", "tool.before", ""), denyCaps))
	req.Transport, req.Conn = tap.Stdio, "stdio:1"
	e := tap.NewEngine(tap.Config{Transport: tap.Stdio}, Default(Options{}))
	e.Feed(req)
	fs := e.Note(tap.Note{Kind: tap.NoteEOF, Dir: tap.FromBackend, Conn: "stdio:1"})
	got := withCheck(fs, "CORR-2")
	if len(got) != 1 {
		t.Fatalf("CORR-2 findings:%s", dump(fs))
	}
	f := got[0]
	if f.Dir != tap.FromHarness || f.Binds != tap.FromBackend {
		t.Errorf("sender %s, binds %s; want harness, backend", f.Dir, f.Binds)
	}
	if s := f.String(); !strings.HasPrefix(s, "#1 sent by harness: error CORR-2 (binds the backend) at /id: ") {
		t.Errorf("String() = %q", s)
	}
	// A finding about the sender's own frame names no other role.
	res := backendFrame(`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"v0","effects":[]}}`)
	res.Dir = GuessDirection(res)
	for _, f := range runRules(tap.Config{Partial: true}, Default(Options{}), res) {
		if f.Check == "BASE-2" && !strings.HasPrefix(f.String(), "#1 sent by backend (guessed): error BASE-2 at ") {
			t.Errorf("String() = %q", f.String())
		}
	}
}
