package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

// writeBomb writes name (gzip-compressed when it ends in .gz): head, then
// n MiB of the byte fill, then tail. A child without the race detector
// writes it (generate): hundreds of MiB through gzip take the
// race-instrumented test process many times the CPU.
func writeBomb(t *testing.T, name, head string, fill byte, n int, tail string) string {
	t.Helper()
	return generate(t, name, "bomb", head, string(fill), strconv.Itoa(n), tail)
}

func init() {
	// bomb PATH HEAD FILL N TAIL: see writeBomb.
	generators["bomb"] = func(p string, args []string) error {
		n, err := strconv.Atoi(args[2])
		if err != nil || len(args[1]) != 1 {
			return fmt.Errorf("bomb: fill %q, n %q", args[1], args[2])
		}
		return bombFile(p, args[0], args[1][0], n, args[3])
	}
}

func bombFile(p, head string, fill byte, n int, tail string) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(p, ".gz") {
		zw, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
		w = zw
	}
	io.WriteString(w, head)
	chunk := bytes.Repeat([]byte{fill}, 1<<20)
	for range n {
		w.Write(chunk)
	}
	io.WriteString(w, tail)
	if zw != nil {
		if err := zw.Close(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// harBomb is a HAR of one AHP exchange whose response body is n MiB of
// fill, base64-encoded when base64 is set.
func harBomb(t *testing.T, name string, fill byte, n int, base64 bool) string {
	req := `{\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"method\":\"hooks/observe\",\"params\":{}}`
	enc, size := "", n<<20
	if base64 {
		enc, size = `"encoding":"base64",`, n<<20/4*3
	}
	head := `{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[{"startedDateTime":"2026-12-04T09:00:00.000Z","time":5,` +
		`"request":{"method":"POST","url":"http://127.0.0.1:8787/agent-hooks","headers":[{"name":"Content-Type","value":"application/json"}],"bodySize":-1,` +
		`"postData":{"mimeType":"application/json","text":"` + req + `"}},` +
		`"response":{"status":200,"headers":[{"name":"Content-Type","value":"application/json"}],"bodySize":-1,` +
		fmt.Sprintf(`"content":{"size":%d,"mimeType":"application/json",%s"text":"`, size, enc)
	return writeBomb(t, name, head, fill, n, `"}},"timings":{"send":0,"wait":5,"receive":0}}]}}`)
}

// runMeasured runs the built binary with args and returns its result and
// peak RSS in MiB.
func runMeasured(t *testing.T, args ...string) (result, float64) {
	t.Helper()
	cmd := exec.Command(tapBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampleRSS(cmd)
	waitWithin(t, cmd, 3*time.Minute)
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}, rss(cmd)
}

// Decompression and size bombs in offline inputs are cut while they are
// decoded: a small .har.gz inflating to a 256 MiB base64 body, a .jsonl.gz
// holding one 256 MiB line given to check, a HAR with a 128 MiB body. Each
// is audited as a truncated copy (TAP-1 says what was cut) and memory stays
// far below the input (issue 28 item 5: 4.2 GB for a 1 GiB body, Go's
// fatal out-of-memory for a 1 GiB line, 1.5 GB for a 300 MB body).
func TestOfflineBombsBounded(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("hundreds of MiB through gzip")
	}
	cases := []struct {
		name string
		args func() []string
		want string
	}{
		{"har.gz base64", func() []string {
			return []string{"replay", "--fail-on", "never", harBomb(t, "bomb.har.gz", 'A', 256, true)}
		}, "frame of 201326592 bytes was forwarded whole but audited only as a 16777216-byte prefix"},
		{"jsonl.gz line", func() []string {
			return []string{"check", "--fail-on", "never", writeBomb(t, "bomb.jsonl.gz", `{"jsonrpc":"2.0","id":1,"result":{"x":"`, 'a', 256, "\"}}\n")}
		}, "frame of 2684354"},
		{"har body", func() []string {
			return []string{"replay", "--fail-on", "never", harBomb(t, "big.har", 'x', 128, false)}
		}, "frame of 134217728 bytes was forwarded whole but audited only as a 16777216-byte prefix"},
	}
	for _, tc := range cases {
		r, peak := runMeasured(t, tc.args()...)
		t.Logf("%s: peak RSS %.1f MiB", tc.name, peak)
		if r.code != 0 {
			t.Errorf("%s: exit %d, stderr %q", tc.name, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "TAP-1") || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%s: report does not say what was cut (%q):\n%s", tc.name, tc.want, r.stdout)
		}
		if peak > 200 && !raceEnabled {
			t.Errorf("%s: peak RSS %.1f MiB, want < 200 MiB", tc.name, peak)
		}
	}
}
