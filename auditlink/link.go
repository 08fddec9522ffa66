package auditlink

import (
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/stdio"
)

// File descriptors of an audit process of its own (StartProcess): the
// link's read end, and a pipe it writes one byte to once it reads the
// link.
const (
	LinkFD  = 3
	ReadyFD = 4
)

// ReadyWait bounds how long a tap waits for its audit process to read
// the link (StartProcess), or for the shared audit process in all
// (Rendezvous.Connect), before it starts the backend or falls back.
const ReadyWait = 2 * time.Second

// A Link is the forwarding process's end of its audit: the Mirror the
// stdio tap writes the audit copies into, and the word that the audit
// finished.
type Link struct {
	mirror *Mirror
	done   chan struct{} // closed when the audit process exited, or the shared one ended the link
	// confirmed says the audit finished the link (its process exited 0,
	// or the shared one said MsgDone); set before done closes.
	confirmed atomic.Bool
	conn      *os.File // the shared audit process's messages; nil for an audit process of its own
	shared    bool
}

// Mirror is where the stdio tap writes the audit copies
// (stdio.Config.Mirror).
func (l *Link) Mirror() *Mirror { return l.mirror }

// Shared says the link goes to the shared audit process.
func (l *Link) Shared() bool { return l.shared }

// An Ending is what Link.End could say about the audit of the link.
type Ending struct {
	// Finished: the audit said it finished the link (findings, capture
	// and state written) before the deadline.
	Finished bool
	// Gone: the audit ended without finishing the link (the audit
	// process was killed): what it had not written is lost.
	Gone bool
	// Dropped counts the records the link dropped for want of room over
	// its life (the audit counted their lines: TAP-1).
	Dropped uint64
	// Unsent is the bytes of records, the end record last, that the
	// link could not take before the deadline: the audit never saw them
	// (and took the link for killed).
	Unsent int
}

// End writes the end record (res, with the deadline the audit must
// finish by), hands over what waits in the backlog until the deadline,
// and waits until then for the audit to finish the link, so that the log
// and capture are complete when the forwarding process exits.
func (l *Link) End(res stdio.Result, deadline time.Time) Ending {
	res.Deadline = deadline
	var e Ending
	e.Unsent = l.mirror.End(res, time.Until(deadline))
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case <-l.done:
		e.Finished = l.confirmed.Load()
		e.Gone = !e.Finished
	case <-t.C:
	}
	if l.conn != nil {
		l.conn.Close()
	}
	e.Dropped = l.mirror.Dropped()
	return e
}

// Close ends the link without an end record (the audit records the link
// as killed). It is for a forwarding process that gives up on its audit.
func (l *Link) Close() {
	l.mirror.Close()
	if l.conn != nil {
		l.conn.Close()
	}
}

// StartProcess starts an audit process of its own for a link: argv (the
// executable and its arguments) gets the link's read end as LinkFD and a
// ready pipe as ReadyFD, stderr as its standard error, and a session of
// its own, so that no signal to the harness's process group or terminal
// reaches it. It waits (at most ReadyWait) for the audit process to read
// the link, so that the first exchanges' copies do not overflow the pipe
// while it starts. backlog bounds the records waiting in this process
// for room in the pipe (bytes).
func StartProcess(argv []string, stderr io.Writer, backlog int) (*Link, error) {
	pm, r, err := NewPipeMirror(backlog)
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		r.Close()
		pm.Close()
		return nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{r, readyW} // LinkFD, ReadyFD
	cmd.Stderr = stderr                    // findings with --log -, the summary, its own notices
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	r.Close()
	readyW.Close()
	if err != nil {
		pm.Close()
		return nil, err
	}
	_ = readyR.SetReadDeadline(time.Now().Add(ReadyWait))
	_, _ = readyR.Read(make([]byte, 1))
	l := &Link{mirror: pm, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		if cmd.Wait() == nil {
			l.confirmed.Store(true)
		}
	}()
	return l, nil
}

// SignalReady writes the ready byte to fd (ReadyFD in an audit process
// StartProcess started; a negative fd is none) and closes it.
func SignalReady(fd int) {
	if fd < 0 {
		return
	}
	if f := os.NewFile(uintptr(fd), "audit-ready"); f != nil {
		f.Write([]byte{1})
		f.Close()
	}
}
