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
// nothing but audit one link, the audit priority p: the calling
// goroutine's thread as AuditThread does, and with PriorityIdle every
// other thread of the process too (the reader of the audit link, the Go
// runtime's collector and timer threads), and so every thread started
// later, which inherits its creator's policy. A thread of the audit left
// at nice 0 or 5 keeps a CPU it runs on for the rest of its time slice
// when the harness, the tap or the backend wakes there (up to a few
// milliseconds), where a SCHED_IDLE one gives it up at once; that wait
// was most of the one-at-a-time tail (bench/schedtrace.sh).
func AuditProcess(p Priority) {
	backgroundThread(p)
	if p == PriorityIdle {
		idleProcess()
	}
}

// AuditSession gives the session the calling audit process leads the
// audit priority p as a whole. Linux schedules each session as a group
// of its own (autogroup, when the tasks are in the root CPU cgroup): the
// audit process's session competes with the harness's as a nice-0 group
// whatever its threads' nice, and an audit thread on a CPU keeps it for
// the rest of its slice when the harness, the tap or the backend wakes
// there. idle puts the session at nice 19. low and normal leave it at 0:
// a session at nice 5 took most of the one-at-a-time tail away, but on a
// saturated machine it left 69-83% of the frames unaudited where nice 0
// left 12-24% (changes/stdiotail.md). Best effort, off the caller's path:
// the kernel rate-limits the change for unprivileged processes, so a
// refused one is retried for a while.
func AuditSession(p Priority) {
	if p == PriorityIdle {
		sessionNice(19)
	}
}
