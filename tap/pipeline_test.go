package tap_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// sharedFixtures is the upstream fixture corpus beside the repository.
const sharedFixtures = "../../shared/ahp/fixtures/draft"

// FuzzPipeline feeds any bytes through the decoder and the whole default
// rule set, as a message file and as a stdio stream: findings come out,
// never a panic (a rule that panics is caught by the engine and reported
// as TAP-2, which fails this test too).
func FuzzPipeline(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(sharedFixtures, "*", "*.json*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, "[]", "\xff\n{", `{"jsonrpc":"2.0","method":"hooks/observe","params":{"event":{"type":"tool.after"}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"fuzz.json", "fuzz.jsonl"} {
			for _, fd := range rules.CheckDocument(name, data, tap.Config{}, rules.Options{}) {
				if fd.Check == "TAP-2" {
					t.Fatalf("%s: rule failed internally on %q: %s", name, data, fd.Message)
				}
				if _, ok := rules.CheckByID(fd.Check); !ok || fd.Level == 0 || fd.Message == "" {
					t.Fatalf("%s: malformed finding %+v", name, fd)
				}
			}
		}
	})
}

// benchFrames builds a realistic conversation: tool.before intercept
// requests of about 1 KiB and their answers (no effect, or a deny).
func benchFrames(pairs int) []*tap.Frame {
	pad := strings.Repeat("0123456789abcdef", 40) // 640 bytes of command text
	out := make([]*tap.Frame, 0, 2*pairs)
	t0 := time.Date(2026, 8, 24, 8, 51, 14, 0, time.UTC)
	for i := range pairs {
		id := fmt.Sprintf("evt-%06d", i)
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":%q,`+
			`"source":"urn:uuid:0d8c6a52-3f0e-4d8e-9b1a-2f6b9a7c1e01","type":"tool.before","time":"2026-08-24T08:51:14Z",`+
			`"harness":{"name":"bench-harness","version":"1.0.0"},"session":{"id":"sess-1","cwd":"/work/repo"},`+
			`"tool":{"name":"Bash","kind":"shell","input":{"command":"echo %s"},"origin":"native"},"call":{"id":"call-%d"},"path":"main"},`+
			`"capabilities":{"effects":["deny"]}}}`, id, id, pad, i)
		resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft","effects":[]}}`, id)
		if i%4 == 3 {
			resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"protocolVersion":"draft","effects":[{"type":"deny",`+
				`"reason":"Commands that echo long strings need a review.","code":"com.example.policy.review"}]}}`, id)
		}
		at := t0.Add(time.Duration(i) * time.Millisecond)
		out = append(out,
			&tap.Frame{Dir: tap.FromHarness, Transport: tap.Stdio, Time: at, Raw: []byte(req), Framing: tap.Framing{Line: true}},
			&tap.Frame{Dir: tap.FromBackend, Transport: tap.Stdio, Time: at.Add(200 * time.Microsecond), Raw: []byte(resp), Framing: tap.Framing{Line: true}})
	}
	return out
}

// BenchmarkDecodeRules measures decode + every default rule per frame.
// One op is one frame; a fresh engine starts every pass over the frames (a
// conversation), its cost included. "mix" is the benchFrames conversation
// (1 KiB requests and their short answers); "requests-1KiB" is the 1 KiB
// intercept requests alone, the heaviest frames.
func BenchmarkDecodeRules(b *testing.B) {
	mix := benchFrames(512)
	var requests []*tap.Frame
	for _, f := range mix {
		if f.Dir == tap.FromHarness {
			requests = append(requests, f)
		}
	}
	b.Run("mix", func(b *testing.B) { benchEngine(b, mix, false) })
	b.Run("requests-1KiB", func(b *testing.B) { benchEngine(b, requests, true) })
}

// benchEngine feeds frames round and round; partial marks traffic that is
// an excerpt (requests without their answers).
func benchEngine(b *testing.B, frames []*tap.Frame, partial bool) {
	cfg := tap.Config{Transport: tap.Stdio, Partial: partial}
	var bytes int64
	for _, f := range frames {
		bytes += int64(len(f.Raw))
	}
	b.SetBytes(bytes / int64(len(frames)))
	// The traffic must be conforming: the benchmark measures the normal path.
	e := tap.NewEngine(cfg, rules.Default(rules.Options{}))
	for _, f := range frames {
		for _, fd := range e.Feed(copyFrame(f)) {
			if fd.Level >= tap.Warn {
				b.Fatalf("benchmark traffic is not conforming: %v", fd)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		if n%len(frames) == 0 {
			e = tap.NewEngine(cfg, rules.Default(rules.Options{}))
		}
		e.Feed(copyFrame(frames[n%len(frames)]))
		n++
	}
	reportRates(b, n, cpuTime()-cpu0)
}

// reportRates reports frames per wall-clock second and, where the CPU time
// is known, per CPU-second.
func reportRates(b *testing.B, n int, cpu time.Duration) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	if cpu > 0 {
		b.ReportMetric(float64(n)/cpu.Seconds(), "frames/cpu-s")
	}
}

// BenchmarkDecode measures the decoder alone on the same mix.
func BenchmarkDecode(b *testing.B) {
	frames := benchFrames(512)
	b.ReportAllocs()
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		f := copyFrame(frames[n%len(frames)])
		f.Decode()
		n++
	}
	reportRates(b, n, cpuTime()-cpu0)
}

func copyFrame(f *tap.Frame) *tap.Frame {
	return &tap.Frame{Dir: f.Dir, Transport: f.Transport, Time: f.Time, Raw: f.Raw, Framing: f.Framing}
}
