package examples

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// TestBackendModes plays discovery to the example backend on stdio: the
// conforming mode answers with one JSON line only, banner writes a line
// that is not JSON first (its STDIO-1 fault), crash ends with ErrCrash and
// no answer, and an unknown mode is refused.
func TestBackendModes(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":"d","method":"hooks/capabilities","params":{"protocolVersion":"` + tap.DefaultSnapshot + `"}}` + "\n"
	for _, tc := range []struct {
		mode      string
		lines     int
		firstJSON bool
		err       error
	}{
		{"conforming", 1, true, nil},
		{"banner", 2, false, nil},
		{"crash", 0, false, ErrCrash},
	} {
		var out bytes.Buffer
		b, err := NewBackend(tc.mode, 0, tap.DefaultSnapshot, &out, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ServeStdio(strings.NewReader(req)); !errors.Is(err, tc.err) {
			t.Errorf("%s: ServeStdio = %v, want %v", tc.mode, err, tc.err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if out.Len() == 0 {
			lines = nil
		}
		if len(lines) != tc.lines {
			t.Fatalf("%s: %d lines %q, want %d", tc.mode, len(lines), lines, tc.lines)
		}
		if len(lines) > 0 && json.Valid([]byte(lines[0])) != tc.firstJSON {
			t.Errorf("%s: first line %q JSON %v, want %v", tc.mode, lines[0], !tc.firstJSON, tc.firstJSON)
		}
		if n := len(lines); n > 0 && !strings.Contains(lines[n-1], `"manifest"`) {
			t.Errorf("%s: last line %q is not the manifest", tc.mode, lines[n-1])
		}
	}
	if _, err := NewBackend("nonsense", 0, tap.DefaultSnapshot, io.Discard, io.Discard); err == nil {
		t.Error("an unknown mode was accepted")
	}
}
