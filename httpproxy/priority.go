package httpproxy

import "sync/atomic"

// niced is how many audit threads LowerAuditPriority will nice in this
// process (SetAuditThreads); 0 stands for 1.
var niced atomic.Int32

// SetAuditThreads says, before the first audit starts, how many audit
// threads LowerAuditPriority will nice: one per route of an HTTP tap.
func SetAuditThreads(n int) { niced.Store(int32(n)) }

func auditThreads() int { return max(int(niced.Load()), 1) }

// withAudit is GOMAXPROCS for a process that started with procs Ps and
// runs n niced audit threads. The audit threads' Ps come out of the CPUs'
// as long as forwarding keeps at least one P beside all of them; a P is
// added only when it would not (at most one: a niced thread the OS has
// descheduled holds its P, and forwarding cannot use it). On two CPUs and
// one route that is 2 Ps, not 3: the third P let the runtime wake more
// threads to spin for work than two cores have, which cost the forwarding
// threads CPU per request and left less to the audit (changes/httpcost2.md).
func withAudit(procs, n int) int { return min(max(procs, n+1), procs+1) }
