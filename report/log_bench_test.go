package report_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// BenchmarkLogFlood measures a violation log written as fast as findings
// come (a harness that breaks a rule on every frame, as the pipelined
// stdio benchmark's STDIO-3): one op is one finding written to a real
// file, Close included.
func BenchmarkLogFlood(b *testing.B) {
	path := filepath.Join(b.TempDir(), "violations.jsonl")
	l, err := report.OpenLog(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)
	f := tap.Finding{Check: "STDIO-3", Requirement: "AHP-STDIO-001", Rule: "STDIO-3/one-intercept", Level: tap.Error,
		Pointer: "/id", Seq: 2, Dir: tap.FromHarness, Conn: "stdio:24852", RPCID: `"thr_1"`, EventID: "thr_1",
		EventType: "tool.before", Time: at,
		Message: `hooks/intercept "thr_1" was sent while hooks/intercept "thr_0" was still unanswered; a persistent backend gets at most one intercept at a time`}
	b.ReportAllocs()
	for b.Loop() {
		l.WriteWait(f)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		b.Fatalf("log not written: %v", err)
	}
}
