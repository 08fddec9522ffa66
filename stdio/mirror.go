package stdio

import (
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Mirror takes the audit copies of a link out of the forwarding process
// (to an audit process, see docs/stdio.md; package auditlink has the
// one ahp-tap uses). Chunk runs on the forwarding
// path, before the bytes are forwarded, and must never block; Note runs
// off it (or after forwarding in that direction is over) and may wait a
// bounded time.
type Mirror interface {
	Chunk(dir tap.Direction, t time.Time, p []byte)
	Note(n tap.Note)
}

// mirror hands n to the configured Mirror, if any, and reports whether
// there was one.
func (t *Tap) mirror(n tap.Note) bool {
	if t.cfg.Mirror == nil {
		return false
	}
	t.cfg.Mirror.Note(n)
	return true
}

// AuditThread lowers the calling goroutine's thread to the audit
// priority p, for good (an audit process's feeding loop).
func AuditThread(p Priority) { backgroundThread(p) }

// AuditProcess gives the calling process, an audit process that does
// nothing but audit one link, the audit priority p on every thread: with
// PriorityLow nice 5, with PriorityIdle SCHED_IDLE (the reader of the
// audit link and the Go runtime's collector and timer threads too, and
// so every thread started later, which inherits its creator's
// priority). Where the process's session is a scheduling group of its
// own (autogroup), the group's nice is what counts against the harness
// (AuditSession); without autogroups (a cgroup of the service manager or
// a container), the threads' own.
//
// No thread is pinned for it, unlike AuditThread: a goroutine pinned to a
// thread that waits for every record has the runtime hand over between
// two threads, a futex wait and wake each, on every record: with the
// reader pinned too, an eighth of the audit process's CPU one request
// at a time (perf, BENCHMARKS.md).
func AuditProcess(p Priority) {
	switch p {
	case PriorityIdle:
		idleProcess()
	case PriorityLow:
		niceProcess(auditNice)
	}
}

// AuditSession gives the session the calling audit process leads the
// audit priority p as a whole. Linux schedules each session as a group
// of its own (autogroup, when the tasks are in the root CPU cgroup): the
// audit process's session competes with the harness's as a nice-0 group
// whatever its threads' nice, and an audit thread on a CPU keeps it for
// the rest of its slice when the harness, the tap or the backend wakes
// there. idle puts the session at nice 19; normal leaves it at 0; low
// is governed by the audit's lag (GroupGovernor). Best effort, off the
// caller's path: the kernel rate-limits the change for unprivileged
// processes, so a refused one is retried for a while.
func AuditSession(p Priority) {
	if p == PriorityIdle {
		sessionNice(19)
	}
}

// Bounds of GroupGovernor: the session's group drops to nice GroupLowNice
// while what waits for the audit stays under GroupCalmBytes for
// GroupCalmFor, and is back at 0 as soon as more than GroupBehindBytes
// wait.
const (
	GroupLowNice     = 5
	GroupBehindBytes = 512 << 10
	GroupCalmBytes   = 64 << 10
	GroupCalmFor     = time.Second
)

// NextGroupNice is the nice the audit session's group should have, now
// at cur, with backlog bytes waiting for the audit and the backlog under
// GroupCalmBytes since calmSince.
func NextGroupNice(cur int, backlog int64, calmSince, now time.Time) int {
	switch {
	case backlog > GroupBehindBytes:
		return 0
	case cur != GroupLowNice && backlog < GroupCalmBytes && now.Sub(calmSince) >= GroupCalmFor:
		return GroupLowNice
	}
	return cur
}

// GroupGovernor keeps the scheduling group of the session this audit
// process leads (--audit-priority low) at nice GroupLowNice while the
// audit keeps up, and at 0 while it falls behind, until stop is closed.
// waiting says the bytes waiting for the audit besides what the link fd
// holds unread; active gets a token each time the link is read. At nice 5
// the group yields a CPU the harness, the tap or the backend wakes on,
// which took most of the one-at-a-time tail away; held there on a
// saturated machine it left 69-83% of the frames unaudited where nice 0
// left 12-24% (BENCHMARKS.md). A positive autogroup nice, and a return to
// 0, need no privilege.
//
// It looks every 50 ms while the link carries traffic. Once the link has
// been quiet for GroupCalmFor with the group lowered, it waits for the
// next read instead: a quiet link cannot fall behind, and an idle tap's
// audit process then does not wake at all.
func GroupGovernor(fd uintptr, waiting func() int64, active <-chan struct{}, stop <-chan struct{}) {
	const every = 50 * time.Millisecond
	cur, calm := 0, time.Now().Add(-GroupCalmFor)
	quiet := 0 // looks in a row that found the link quiet
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		backlog := pendingBytes(fd) + waiting()
		if backlog >= GroupCalmBytes {
			calm = now
		}
		if want := NextGroupNice(cur, backlog, calm, now); want != cur && setSessionNice(want) == nil {
			cur = want
		}
		select {
		case <-active:
			quiet = 0
		default:
			if backlog > 0 {
				quiet = 0
			} else {
				quiet++
			}
		}
		if cur == GroupLowNice && time.Duration(quiet)*every >= GroupCalmFor {
			select {
			case <-stop:
				return
			case <-active:
				quiet = 0
			}
		}
		t.Reset(every)
	}
}
