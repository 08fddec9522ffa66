package mock

import (
	"io"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A recording read from something it can read again (a file) keeps no
// frame bytes: Frame reads them back from their record, byte for byte,
// also after a byte order mark. One read from a stream keeps them.
func TestRecordingReadsFramesBack(t *testing.T) {
	capt := "\ufeff" + header + "\n" + frameLine(1, "harness", request) + "\n" + frameLine(2, "backend", response) + "\n" + frameLine(3, "backend", `{"jsonrpc":"2.0","id":"other","result":{}}`) + "\n"
	rec, err := Load(strings.NewReader(capt), false)
	if err != nil {
		t.Fatal(err)
	}
	st := rec.Steps[0]
	if st.Request.Raw != nil || st.Response.Raw != nil {
		t.Errorf("the recording holds frame bytes: %q %q", st.Request.Raw, st.Response.Raw)
	}
	if got := rec.Frame(st.Request); string(got.Raw) != request || got.Seq != 1 {
		t.Errorf("Frame(request) = #%d %q", got.Seq, got.Raw)
	}
	if got := rec.Frame(st.Response); string(got.Raw) != response {
		t.Errorf("Frame(response) = %q", got.Raw)
	}
	// A pipelined answer to another request is known as one unread.
	if len(st.Output) != 2 {
		t.Fatalf("output %d frames", len(st.Output))
	}
	if _, ok := st.Output[1].Msg.(*tap.Response); !ok {
		t.Errorf("the second output frame is not known as a response")
	}
	incoming := frame(strings.Replace(request, `"id":"evt_1"`, `"id":42`, 1))
	if got := string(Answer(st, incoming)); !strings.Contains(got, `"id":42`) {
		t.Errorf("Answer = %s", got)
	}

	rec, err = Load(io.MultiReader(strings.NewReader(capt)), false)
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Steps[0].Request.Raw) != request || string(rec.Frame(rec.Steps[0].Request).Raw) != request {
		t.Errorf("a recording read from a stream lost its bytes")
	}
}
