package stdio

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Fault injection (--inject, issue 25). With Config.Inject set, both
// forwarding loops cut their bytes into lines (forwarding each line
// unchanged and whole, once its "\n" has been read), so that the tap can
// answer selected requests in the backend's place. Without it, Run uses
// the plain copy loops of tap.go and none of this is on the path.

// injectLoops counts the injecting loops started (tests: with no --inject,
// none is on the forwarding path).
var injectLoops atomic.Int64

// maxInjectLine is how many bytes of a line without "\n" the injecting
// loops hold before forwarding them undecided.
const maxInjectLine = 16 << 20

// maxInjectPending bounds the requests whose answers wait to be swallowed
// or delayed; past it, no further fault is injected (said once).
const maxInjectPending = 1 << 16

// held is a fault waiting for the backend's answer to the request ID.
type held struct {
	f  inject.Fault
	id []byte
	// n is how many answers to ID the fault still takes: a harness that
	// retries with the same id before the backend answered sends the
	// backend ID again, and each of its answers is the fault's.
	n int
}

// injector is the state of one tap's injected faults.
type injector struct {
	t    *Tap
	plan *inject.Plan

	outMu  sync.Mutex // serialises writes to the harness (forwarded, synthesized, delayed)
	out    io.Writer
	closed bool // the harness's side was closed on purpose (close, partial): nothing more is written

	mu      sync.Mutex
	pending map[string]held // by inject.IDKey: answers to swallow (synthetic) or hold (delay)
	full    bool            // said that pending is full

	delayed sync.WaitGroup // delayed answers not yet written
}

func newInjector(t *Tap) *injector {
	return &injector{t: t, plan: t.cfg.Inject, out: t.cfg.Stdout, pending: map[string]held{}}
}

// eachLine runs c's loop, cutting what it reads into lines: each goes to
// handle with its "\n"; a line longer than maxInjectLine, and a last line
// without "\n", go undecided (whole=false). handle returns false to stop.
func (c *copier) eachLine(handle func(line []byte, whole bool) bool) {
	c.mu.Lock()
	if c.t.cfg.Hash {
		c.sum = sha256.New()
	}
	c.mu.Unlock()
	buf := make([]byte, readSize)
	var line []byte
	for {
		n, rerr := c.src.Read(buf)
		p := buf[:n]
		for len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				line = append(line, p...)
				if len(line) > maxInjectLine {
					if !handle(line, false) {
						return
					}
					line = line[:0]
				}
				break
			}
			line = append(line, p[:i+1]...)
			p = p[i+1:]
			if !handle(line, true) {
				return
			}
			line = line[:0]
		}
		if rerr != nil {
			if rerr != io.EOF && !errors.Is(rerr, os.ErrClosed) {
				c.readErr = rerr
			}
			if len(line) > 0 {
				handle(line, false)
			}
			return
		}
	}
}

// runUp is the harness→backend loop with faults: each request line is
// decided, forwarded unchanged, then the fault acted on.
func (j *injector) runUp(c *copier) {
	injectLoops.Add(1)
	c.eachLine(func(line []byte, whole bool) bool {
		c.t.audit(c.dir, line)
		var (
			req inject.Request
			f   inject.Fault
			hit bool
		)
		if whole {
			if r, ok := inject.Decode(line); ok {
				req = r
				f, hit = j.plan.Decide(r)
				hit = hit && j.register(f, r)
			}
		}
		if hit {
			// Before the backend can answer: its answer is audited after
			// the note, so the audit knows the answer is not the harness's.
			j.note(tap.NoteInjected, f, req.ID, inject.Describe(f, req))
		}
		if hit && f.Kind == inject.Banner {
			// Before the request reaches the backend, so before its
			// answer: written after, it could follow the answer, and a
			// harness done with the backend never read it.
			j.write([]byte(inject.BannerLine+"\n"), nil)
		}
		if hit && f.Kind == inject.Crash {
			// Killed before the request reaches it: a backend fast
			// enough could otherwise answer between the write and the
			// kill, and the harness would see no crash at all.
			j.t.killGroup(syscall.SIGKILL)
		}
		c.state.Store(stateWriting)
		w, werr := c.dst.Write(line)
		c.state.Store(stateReading)
		if werr == nil && w != len(line) {
			werr = io.ErrShortWrite
		}
		c.count(line[:w])
		if hit {
			j.act(f, req)
		}
		if werr != nil {
			c.writeErr = werr
			return false
		}
		return true
	})
	c.t.eof(c.dir)
}

// register remembers that r's answer is the fault's business (swallowed
// or held), before r reaches the backend. It returns false when the fault
// is not injected after all (too many answers pending).
func (j *injector) register(f inject.Fault, r inject.Request) bool {
	if f.Kind != inject.Delay && !f.Synthetic() {
		return true // banner, crash: the backend's answer (if any) goes through
	}
	key := inject.IDKey(r.ID)
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.pending) >= maxInjectPending {
		if !j.full {
			j.full = true
			printable.Fprintf(j.t.cfg.Diag, "ahp-tap: --inject: %d answers already wait to be swallowed or delayed; no further fault is injected\n", maxInjectPending)
		}
		return false
	}
	h := j.pending[key]
	if h.n > 0 && h.f.Kind != f.Kind {
		return false // an answer to this id is already another fault's: one fault per id at a time
	}
	j.pending[key] = held{f, bytes.Clone(r.ID), h.n + 1}
	return true
}

// act injects f for r, which has just been forwarded to the backend.
func (j *injector) act(f inject.Fault, r inject.Request) {
	switch f.Kind {
	case inject.Error, inject.Malformed, inject.InvalidDeny, inject.Unadvertised:
		j.write(append(inject.Answer(f, r), '\n'), nil)
	case inject.Partial:
		j.write(inject.Answer(f, r), nil)
		j.closeHarness()
	case inject.Close:
		j.closeHarness()
	}
}

// note records a fact of the injection for the audit (and the capture), in
// order with the frames.
func (j *injector) note(kind tap.NoteKind, f inject.Fault, id []byte, detail string) {
	mk := func() tap.Note {
		return tap.Note{Kind: kind, Time: time.Now(), Conn: j.t.cfg.Conn, Dir: tap.FromBackend, Fault: string(f.Kind),
			ID: string(id), Detail: detail, Scenario: f.Scenario}
	}
	if j.t.mirror(mk()) || j.t.aud == nil {
		return
	}
	j.t.queueNote(func() chunk { n := mk(); return chunk{note: &n} })
}

// write writes p to the harness unless its side was closed; count, when
// set, keeps the statistics of forwarded backend bytes.
func (j *injector) write(p []byte, count *copier) error {
	j.outMu.Lock()
	defer j.outMu.Unlock()
	if j.closed {
		return nil
	}
	w, err := j.out.Write(p)
	if err == nil && w != len(p) {
		err = io.ErrShortWrite
	}
	if count != nil {
		count.count(p[:w])
	}
	return err
}

// closeHarness closes the harness's side of the backend's stdout.
func (j *injector) closeHarness() {
	j.outMu.Lock()
	defer j.outMu.Unlock()
	if j.closed {
		return
	}
	j.closed = true
	if c, ok := j.out.(io.Closer); ok {
		c.Close()
	}
}

// runDown is the backend→harness loop with faults: every line is audited
// as the backend sent it; an answer a fault took over is swallowed, one a
// delay holds is written later, the rest are forwarded unchanged.
func (j *injector) runDown(c *copier) {
	injectLoops.Add(1)
	c.eachLine(func(line []byte, whole bool) bool {
		c.t.audit(c.dir, line)
		if whole {
			if key := inject.ResponseID(line); key != "" {
				j.mu.Lock()
				h, ok := j.pending[key]
				if h.n--; h.n > 0 {
					j.pending[key] = h
				} else {
					delete(j.pending, key)
				}
				j.mu.Unlock()
				if ok && h.f.Kind == inject.Delay {
					answer := bytes.Clone(line)
					j.delayed.Add(1)
					time.AfterFunc(h.f.Delay, func() {
						defer j.delayed.Done()
						j.write(answer, c)
					})
					return true
				}
				if ok {
					f := h.f
					j.note(tap.NoteSwallowed, f, h.id, fmt.Sprintf("the backend's answer (%d bytes) was not forwarded: an injected %s answered in its place [%s]", len(line), f.Kind, inject.Notice))
					return true
				}
			}
		}
		c.state.Store(stateWriting)
		err := j.write(line, c)
		c.state.Store(stateReading)
		if err != nil {
			c.writeErr = err
			return false
		}
		return true
	})
	// Held answers are still the harness's, until the shutdown bound.
	done := make(chan struct{})
	go func() { j.delayed.Wait(); close(done) }()
	select {
	case <-done:
	case <-c.t.giveUp:
	}
	c.t.eof(c.dir)
}
