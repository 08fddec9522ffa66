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
// audit process's session competed with the harness's at nice 0 whatever
// its threads' nice, and an audit thread on a CPU kept it for the rest of
// its slice when the harness, the tap or the backend woke there. low puts
// the session at nice 5 and idle at nice 19; normal leaves it at 0.
// Best effort, off the caller's path: the kernel rate-limits the change
// for unprivileged processes, so a refused one is retried for a while.
func AuditSession(p Priority) {
	nice := 5
	switch p {
	case PriorityNormal:
		return
	case PriorityIdle:
		nice = 19
	}
	sessionNice(nice)
}
