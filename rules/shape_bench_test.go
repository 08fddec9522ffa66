package rules

import (
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// benchRequest is a realistic hooks/intercept request of about 1 KiB: a
// tool.before with session, turn, tool input, one content part and
// capabilities with modify and flow blocks.
const benchRequest = `{"jsonrpc":"2.0","id":"evt_01J9Z8Q6W3K4M5N6P7R8S9T0UV","method":"hooks/intercept","params":{"protocolVersion":"draft",` +
	`"event":{"id":"evt_01J9Z8Q6W3K4M5N6P7R8S9T0UV","source":"https://harness.example/runtime/42","type":"tool.before","time":"2026-08-24T08:51:14.123Z",` +
	`"harness":{"name":"example-harness","version":"1.4.2"},"session":{"id":"sess_7f3a9c","cwd":"/home/dev/project","model":"example-model-large"},` +
	`"turn":{"id":"turn_0042"},"call":{"id":"call_5d1e"},"path":"native",` +
	`"tool":{"name":"write_file","kind":"file_write","origin":"native","input":{"path":"src/main.go","content":"package main\n\nfunc main() {}\n","mode":"0644"}},` +
	`"items":[{"id":"part_1","kind":"text","mediaType":"text/plain","selection":"body","text":"Write the entry point."},` +
	`{"id":"part_2","kind":"attachment","mediaType":"image/png","selection":"metadata","size":48213,"sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}],` +
	`"extensions":{"org.w3c.trace_context":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-01"}}},` +
	`"capabilities":{"effects":["deny","allow","ask","modify","flow","message"],"modify":{"input":{"replace":true,"merge":true}},"flow":{"operations":["stop"]}}}}`

// benchResponse answers it with a message, a modify of the input and a deny,
// padded with a realistic reason to about 1 KiB.
const benchResponse = `{"jsonrpc":"2.0","id":"evt_01J9Z8Q6W3K4M5N6P7R8S9T0UV","result":{"protocolVersion":"draft","effects":[` +
	`{"type":"message","text":"The policy backend reviewed this write and adjusted the file mode before allowing it to proceed."},` +
	`{"type":"modify","target":"input","operation":"merge","value":{"mode":"0600","content":"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"}},` +
	`{"type":"inject","target":"context","operation":"append","deliverAt":"next_turn","value":[{"id":"inj_1","role":"system","parts":[` +
	`{"id":"inj_1_p","kind":"text","mediaType":"text/plain","selection":"body","text":"Files under src/ must be written with mode 0600 in this repository; the policy backend enforces this for every write_file call and records each adjustment for the weekly audit report that the security team reviews."}]}]},` +
	`{"type":"deny","reason":"Writing outside the allowed workspace roots is not permitted by the organisation policy for this project.","code":"com.example.policy.workspace_root"}],` +
	`"extensions":{"com.example.policy":{"decisionId":"dec_9a8b7c6d5e4f","rulesEvaluated":17,"latencyBudgetMs":250}}}}`

func shapeRulesOnly() []tap.Rule {
	var rs []tap.Rule
	for _, fam := range [][]tap.Rule{capabilityRules(), eventRules(), effectRules(), contentRules()} {
		rs = append(rs, fam...)
	}
	return rs
}

func TestBenchFramesConform(t *testing.T) {
	if n := len(benchRequest); n < 900 || n > 1200 {
		t.Errorf("len(benchRequest) = %d, want about 1 KiB", n)
	}
	if n := len(benchResponse); n < 900 || n > 1200 {
		t.Errorf("len(benchResponse) = %d, want about 1 KiB", n)
	}
	fs := runRules(tap.Config{}, shapeRulesOnly(), harnessFrame(benchRequest), backendFrame(benchResponse))
	if len(fs) != 0 {
		t.Errorf("benchmark frames have findings:%s", dump(fs))
	}
}

// BenchmarkShapes feeds 1 KiB intercept requests and responses, decoded
// afresh each time, through the shape rules (EVT-1, EFF-1, EDIT-1, EDIT-2,
// CAP-1, CAP-2) in one engine, and reports frames per second.
func BenchmarkShapes(b *testing.B) {
	req, resp := []byte(benchRequest), []byte(benchResponse)
	b.Run("decode+rules", func(b *testing.B) {
		cpu0 := processCPU()
		rules := shapeRulesOnly()
		var e *tap.Engine
		b.ReportAllocs()
		b.SetBytes(int64(len(req)+len(resp)) / 2)
		for i := 0; b.Loop(); i++ {
			if i%1024 == 0 {
				// A conversation keeps every exchange it saw (tap.Conversation
				// order), so one engine per b.N frames would measure a
				// growing heap; start a new conversation every 512 exchanges.
				e = tap.NewEngine(tap.Config{}, rules)
			}
			raw, dir := req, tap.FromHarness
			if i%2 == 1 {
				raw, dir = resp, tap.FromBackend
			}
			if fs := e.Feed(&tap.Frame{Dir: dir, Transport: tap.HTTP, Raw: raw}); len(fs) != 0 {
				b.Fatalf("findings: %v", fs)
			}
		}
		reportRate(b, cpu0)
	})
	b.Run("walk", func(b *testing.B) {
		cpu0 := processCPU()
		rq, _, _ := tap.ParseJSON(req)
		rs, _, _ := tap.ParseJSON(resp)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			var ps []problem
			if i%2 == 0 {
				ps = append(eventProblems(rq.Path("params", "event"), "/params/event", true), interceptCapabilityProblems(rq.Get("params"), "/params")...)
			} else {
				ps = interceptResultProblems(rs.Get("result"))
			}
			if len(ps) != 0 {
				b.Fatalf("problems: %s", showProblems(ps))
			}
		}
		reportRate(b, cpu0)
	})
	b.Run("decode", func(b *testing.B) {
		cpu0 := processCPU()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			raw := req
			if i%2 == 1 {
				raw = resp
			}
			f := &tap.Frame{Raw: raw}
			f.Decode()
		}
		reportRate(b, cpu0)
	})
}

// reportRate reports frames per wall second and, where the process CPU time
// is known, frames per CPU second (the honest number on a busy machine).
func reportRate(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "frames/cpu-s")
	}
}
