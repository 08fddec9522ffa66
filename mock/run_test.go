package mock

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	"github.com/ahp-tap/ahp-tap/tap"
)

// TestOpenServeFinish serves a recording on stdio through Open, and
// Finish says the run failed when the harness sent what the recording does
// not hold, and not when it replays it.
func TestOpenServeFinish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.capture")
	if err := os.WriteFile(path, []byte(header+"\n"+frameLine(1, "harness", request)+"\n"+frameLine(2, "backend", response)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := linkconf.Load(linkconf.Files{Snapshot: tap.DefaultSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Name: "mock backend", Capture: filepath.Join(t.TempDir(), "none"), Link: l, Stderr: &bytes.Buffer{}}); err == nil || !strings.HasPrefix(err.Error(), "mock backend: ") {
		t.Errorf("Open of a missing capture = %v, want a one-line error naming the command", err)
	}
	for _, c := range []struct {
		name, in string
		failed   bool
	}{
		{"replayed", request + "\n", false},
		{"unknown request", strings.Replace(request, "ls", "rm -rf /", 1) + "\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stderr, stdout bytes.Buffer
			r, err := Open(Config{Name: "mock backend", Capture: path, Link: l, Transport: tap.Stdio, Conn: "stdio:1",
				Quiet: true, Stderr: &stderr, Diag: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			failed, err := r.Finish(r.ServeStdio(strings.NewReader(c.in), &stdout, "stdio:1"))
			if err != nil || failed != c.failed {
				t.Errorf("Finish = %v, %v; want failed=%v; stderr:\n%s", failed, err, c.failed, stderr.String())
			}
			if !strings.Contains(stderr.String(), "ahp-tap mock backend: ") || !strings.Contains(stderr.String(), "; audit: ") {
				t.Errorf("no summary line on stderr:\n%s", stderr.String())
			}
		})
	}
}
