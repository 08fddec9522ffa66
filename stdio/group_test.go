package stdio

import (
	"testing"
	"time"
)

// TestNextGroupNice walks the audit session's group through a burst: it
// goes to nice 0 as soon as the audit falls behind, stays there until the
// backlog has been small for GroupCalmFor, and then goes back to
// GroupLowNice; a backlog between the two bounds changes nothing.
func TestNextGroupNice(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name      string
		cur       int
		backlog   int64
		calmSince time.Time
		now       time.Time
		want      int
	}{
		{"keeping up, lowered", GroupLowNice, 0, t0, t0.Add(time.Hour), GroupLowNice},
		{"behind, lowered", GroupLowNice, GroupBehindBytes + 1, t0, t0, 0},
		{"behind, at 0", 0, GroupBehindBytes + 1, t0, t0, 0},
		{"between the bounds, lowered", GroupLowNice, GroupCalmBytes + 1, t0, t0, GroupLowNice},
		{"between the bounds, at 0", 0, GroupCalmBytes + 1, t0.Add(-time.Hour), t0, 0},
		{"calm, not long enough", 0, 0, t0, t0.Add(GroupCalmFor - time.Millisecond), 0},
		{"calm long enough", 0, GroupCalmBytes - 1, t0, t0.Add(GroupCalmFor), GroupLowNice},
	} {
		if got := NextGroupNice(c.cur, c.backlog, c.calmSince, c.now); got != c.want {
			t.Errorf("%s: NextGroupNice(%d, %d, ...) = %d, want %d", c.name, c.cur, c.backlog, got, c.want)
		}
	}
}
