package capture

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// order records the frames the sessions judged, in the order judged.
type order struct{ seen *[]string }

func (o order) Judged(f *tap.Frame, _ *tap.Exchange) {
	*o.seen = append(*o.seen, f.Conn+"@"+f.Time.Format("05.000"))
}

func captureText(conn string, ms ...int) string {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"header","format":"ahp-tap-capture","version":1,"transport":"stdio","started":"2026-01-01T00:00:00Z","conn":%q,"endRecord":true}`+"\n", conn)
	for i, m := range ms {
		at := t0.Add(time.Duration(m) * time.Millisecond).Format(time.RFC3339Nano)
		raw := fmt.Sprintf(`{"jsonrpc":"2.0","method":"hooks/observe","params":{"n":%d}}`, i)
		fmt.Fprintf(&b, `{"type":"frame","time":%q,"seq":%d,"direction":"harness","transport":"stdio","conn":%q,"raw":%q}`+"\n", at, i+1, conn, raw)
	}
	fmt.Fprintf(&b, `{"type":"note","time":%q,"conn":%q,"note":{"kind":"end","conn":%q}}`+"\n", t0.Add(time.Second).Format(time.RFC3339Nano), conn, conn)
	return b.String()
}

// Merge interleaves the records of several captures by time, each file in
// its own order, and hands every segment over once; Replay of the same
// files one by one keeps them apart.
func TestMergeByTime(t *testing.T) {
	a := captureText("a", 0, 20, 40)
	b := captureText("b", 10, 30, 31)
	var seen []string
	var opened, done []int
	err := Merge([]*Reader{NewReader(strings.NewReader(a)), NewReader(strings.NewReader(b))},
		func(i int, h *Header) (*tap.Session, error) {
			opened = append(opened, i)
			return tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}),
				Watch: order{&seen}}), nil
		}, func(s *tap.Session) { done = append(done, 1); s.Close() })
	if err != nil {
		t.Fatal(err)
	}
	want := "a@00.000 b@00.010 a@00.020 b@00.030 b@00.031 a@00.040"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("merged order:\n got %s\nwant %s", got, want)
	}
	if len(opened) != 2 || opened[0] == opened[1] || len(done) != 2 {
		t.Errorf("opened %v, done %d segments", opened, len(done))
	}
	// Replay of one file keeps to it.
	seen = nil
	if err := Replay(NewReader(strings.NewReader(a)), func(h *Header) (*tap.Session, error) {
		return tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}), Watch: order{&seen}}), nil
	}, func(s *tap.Session) { s.Close() }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, " "); got != "a@00.000 a@00.020 a@00.040" {
		t.Errorf("replay of one: %s", got)
	}
}

// A note the audit stamped later than the frames after it (a deadline it
// judged, the time its clock vouched for) does not hold back that file's
// earlier frames behind the other file's later ones: without the
// lookahead to the next frame, b's frames at 30 and 31 ms came before
// a's at 20 ms.
func TestMergeNoteStampedLate(t *testing.T) {
	a := captureText("a", 0, 20, 40)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := t0.Add(35 * time.Millisecond).Format(time.RFC3339Nano)
	late := fmt.Sprintf(`{"type":"note","time":%q,"note":{"kind":"deadline","time":%q}}`+"\n", at, at)
	lines := strings.SplitAfter(a, "\n")
	a = lines[0] + lines[1] + late + strings.Join(lines[2:], "") // after a@0, before a@20
	b := captureText("b", 10, 30, 31)
	var seen []string
	err := Merge([]*Reader{NewReader(strings.NewReader(a)), NewReader(strings.NewReader(b))},
		func(i int, h *Header) (*tap.Session, error) {
			return tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}),
				Watch: order{&seen}}), nil
		}, func(s *tap.Session) { s.Close() })
	if err != nil {
		t.Fatal(err)
	}
	want := "a@00.000 b@00.010 a@00.020 b@00.030 b@00.031 a@00.040"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("merged order:\n got %s\nwant %s", got, want)
	}
}
