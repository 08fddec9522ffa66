package report_test

import (
	"os"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A transport adapter counts findings with a Collector (beside the
// violation log, through tap.MultiSink), meters each direction, and prints
// the summary at exit.
func ExampleCollector() {
	var findings report.Collector
	sink := tap.MultiSink{&findings /*, a *report.Log */}
	toBackend := report.NewMeter(tap.FromHarness)

	line := []byte(`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}` + "\n")
	toBackend.Write(line) // a copy of what was forwarded
	toBackend.AddFrames(1)
	sink.Write(tap.Finding{Check: "EVT-1", Level: tap.Error, Message: "params.event is missing"})

	sum := findings.Summary()
	sum.Streams = []report.Stream{toBackend.Stream()}
	sum.NotPossible = []report.NotPossible{{Check: "CORR-3", Reason: "no --timeout and no registration"}}
	sum.WriteText(os.Stdout)
	// Output:
	// summary: 1 error, 0 warnings, 0 info
	//   harness -> backend: 1 frame, 55 bytes, sha256 052da00edda0ed3c1109772b08468a7eb396816ecdcfd41a00dfa9a4612f455f
	//   EVT-1    1 error, 0 warnings, 0 info; first: params.event is missing
	//   not checked: CORR-3 (no --timeout and no registration)
}
