package mock

import (
	"errors"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

const header = `{"type":"header","format":"ahp-tap-capture","version":1,"tool":"test","snapshot":"draft","transport":"stdio","started":"2026-01-01T00:00:00Z","conn":"stdio:1"}`

func frameLine(seq int, dir, raw string) string {
	return `{"type":"frame","time":"2026-01-01T00:00:00Z","seq":` + string(rune('0'+seq)) + `,"direction":"` + dir + `","transport":"stdio","conn":"stdio:1","framing":{"line":true},"raw":` + quote(raw) + `}`
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

const (
	request  = `{"jsonrpc":"2.0","id":"evt_1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"evt_1","source":"urn:h","type":"tool.before","time":"2026-01-01T00:00:00Z","session":{"id":"s1"},"tool":{"name":"Bash","input":{"command":"ls"}}},"capabilities":{"effects":["deny"]}}}`
	response = `{"jsonrpc":"2.0", "id":"evt_1", "result":{"protocolVersion":"draft", "effects":[]}}`
)

func load(t *testing.T, lines ...string) *Recording {
	t.Helper()
	rec, err := Load(strings.NewReader(header+"\n"+strings.Join(lines, "\n")+"\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func frame(raw string) *tap.Frame {
	f := &tap.Frame{Raw: []byte(raw)}
	f.Decode()
	return f
}

// TestLoadPairsSteps: a banner before the first request is the prelude;
// a request's answer and the lines after it are its output.
func TestLoadPairsSteps(t *testing.T) {
	rec := load(t, frameLine(1, "backend", "banner"), frameLine(2, "harness", request), frameLine(3, "backend", response), frameLine(4, "backend", "log line"))
	if len(rec.Prelude) != 1 || string(rec.Prelude[0]) != "banner\n" {
		t.Errorf("Prelude = %q, want the banner line", rec.Prelude)
	}
	if len(rec.Steps) != 1 || rec.Steps[0].Response == nil || len(rec.Steps[0].Output) != 2 {
		t.Fatalf("Steps = %+v, want one step with its response and two output frames", rec.Steps)
	}
	if got := rec.Steps[0].Describe(); got != `#2 hooks/intercept tool.before id "evt_1"` {
		t.Errorf("Describe() = %s", got)
	}
}

// TestLoadRefusesRedacted: a body with the redaction placeholder is refused
// unless allowed.
func TestLoadRefusesRedacted(t *testing.T) {
	in := header + "\n" + frameLine(1, "harness", strings.Replace(request, "ls", tap.RedactedCredential, 1)) + "\n"
	var red *Redacted
	if _, err := Load(strings.NewReader(in), false); !errors.As(err, &red) || red.Frames[0] != 1 {
		t.Errorf("Load(redacted) = %v, want a *Redacted naming frame 1", err)
	}
	if _, err := Load(strings.NewReader(in), true); err != nil {
		t.Errorf("Load(redacted, allowed) = %v", err)
	}
	if _, err := Load(strings.NewReader(header+"\n"), false); !errors.Is(err, ErrEmpty) {
		t.Errorf("Load(no harness message) = %v, want ErrEmpty", err)
	}
}

// TestKeyIgnoresVolatile: ids, times, source and protocolVersion do not
// change the key; content does, in strict mode only.
func TestKeyIgnoresVolatile(t *testing.T) {
	base := Key(frame(request), Strict, nil)
	volatileChanged := strings.NewReplacer(`"evt_1"`, `"x9"`, `"urn:h"`, `"urn:other"`, `2026-01-01T00:00:00Z`, `2030-05-05T00:00:00Z`,
		`"s1"`, `"s2"`, `"protocolVersion":"draft"`, `"protocolVersion":"0.2"`).Replace(request)
	if got := Key(frame(volatileChanged), Strict, nil); got != base {
		t.Errorf("Key with volatile members changed = %s, want %s", got, base)
	}
	contentChanged := strings.Replace(request, `"ls"`, `"rm -rf /"`, 1)
	if Key(frame(contentChanged), Strict, nil) == base {
		t.Error("strict Key ignores a changed command")
	}
	if Key(frame(contentChanged), Shape, nil) != Key(frame(request), Shape, nil) {
		t.Error("shape Key differs for a changed string value")
	}
	if Key(frame(strings.Replace(request, `"ls"`, `7`, 1)), Shape, nil) == Key(frame(request), Shape, nil) {
		t.Error("shape Key ignores a value of another kind")
	}
	ptr, _ := ParsePointer("/params/event/tool/input/command")
	if Key(frame(contentChanged), Strict, []Pointer{ptr}) != Key(frame(request), Strict, []Pointer{ptr}) {
		t.Error("strict Key compares an ignored pointer")
	}
}

// TestAnswerSubstitutes: the incoming id and protocolVersion replace the
// recorded ones; every other byte (spacing, order) is as recorded; a
// recorded version that was not the request's is kept.
func TestAnswerSubstitutes(t *testing.T) {
	rec := load(t, frameLine(1, "harness", request), frameLine(2, "backend", response))
	in := frame(strings.NewReplacer(`"id":"evt_1"`, `"id":17`, `"protocolVersion":"draft"`, `"protocolVersion":"0.2"`).Replace(request))
	got := string(Answer(rec.Steps[0], in))
	want := `{"jsonrpc":"2.0", "id":17, "result":{"protocolVersion":"0.2", "effects":[]}}`
	if got != want {
		t.Errorf("Answer = %s, want %s", got, want)
	}
	wrong := load(t, frameLine(1, "harness", request), frameLine(2, "backend", strings.Replace(response, `"draft"`, `"2025-01-01"`, 1)))
	if got := string(Answer(wrong.Steps[0], in)); !strings.Contains(got, `"2025-01-01"`) || !strings.Contains(got, `"id":17`) {
		t.Errorf("Answer of a wrong recorded version = %s, want it kept (with id 17)", got)
	}
}

// TestMatcherOrder: recorded steps with one key answer in order, then the
// last answers again; an unknown request gets -32002, an unknown method
// -32601.
func TestMatcherOrder(t *testing.T) {
	second := strings.Replace(request, "evt_1", "evt_2", 2)
	rec := load(t, frameLine(1, "harness", request), frameLine(2, "backend", response), frameLine(3, "harness", second))
	m := NewMatcher(rec, Strict, nil)
	for i, want := range []*Step{rec.Steps[0], rec.Steps[1], rec.Steps[1]} {
		if got := m.Find(frame(request)); got != want {
			t.Errorf("Find #%d = %v, want step %s", i+1, got, want.Describe())
		}
	}
	if m.Find(frame(strings.Replace(request, `"ls"`, `"pwd"`, 1))) != nil {
		t.Error("Find matched a request with another command")
	}
	if got := string(m.Unmatched(frame(strings.Replace(request, `"ls"`, `"pwd"`, 1)))); !strings.Contains(got, `"id":"evt_1","error":{"code":-32002`) {
		t.Errorf("Unmatched = %s, want -32002 with the request's id", got)
	}
	if m.Find(frame(`{"jsonrpc":"2.0","id":3,"method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`)) != nil {
		t.Error("Find matched discovery in a recording without one")
	}
	if got := string(m.Unmatched(frame(`{"jsonrpc":"2.0","id":3,"method":"hooks/other","params":{}}`))); !strings.Contains(got, `"id":3,"error":{"code":-32601`) {
		t.Errorf("Unmatched(unknown method) = %s, want -32601", got)
	}
}
