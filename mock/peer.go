package mock

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/answers"
	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
)

// The two live peers of `ahp-tap mock`: a backend that answers a harness
// from a recording (stdio or HTTP), and a harness that plays a recording
// to a live backend and compares its answers. Each feeds what crosses
// the wire to an audit Session, as a tap would.

// MaxBody caps one HTTP body or stdio line a mock side reads.
const MaxBody = 16 << 20

// stopGrace is how long the mock harness waits for a backend to end after
// SIGTERM before it kills the backend's process group.
const stopGrace = 5 * time.Second

// auditQueue is the HTTP mock backend's audit queue, in frames and notes
// (the HTTP tap's).
const auditQueue = 16384

// A Peer is one side of a recording, served or played live; what crosses
// the wire is audited by Session.
type Peer struct {
	Rec     *Recording
	Match   Match
	Ignore  []Pointer
	Session *tap.Session
	// Diag takes the peer's lines (unmatched requests, differences); it
	// must be safe for concurrent use (HTTP handlers).
	Diag io.Writer
	// Audit builds the audit copy of HTTP exchanges as the HTTP tap does,
	// and redacts the credentials it has seen from every line written.
	Audit *httpaudit.Builder
}

// A Result is what a peer did.
type Result struct {
	// Failures counts what failed the peer's job: requests no recorded
	// exchange matched, answers that differ, backends that did not start.
	Failures int
	// What says it in one phrase, for the summary line.
	What string
}

// A StartError is a backend the mock harness could not start at all.
type StartError struct{ Err error }

func (e *StartError) Error() string { return "cannot start the backend: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// backendSide answers the harness's requests from the recording.
type backendSide struct {
	p       *Peer
	matcher *Matcher
	mu      sync.Mutex // guards matcher and the counts (HTTP handlers run concurrently)
	served  int        // requests answered from the recording
	missed  int        // requests no recorded exchange matched
}

// answer returns what the backend sends for one harness message: on stdio
// the recorded lines (the answer with the incoming id among them), line
// endings included; the answer alone (resp) and its HTTP status. An
// unmatched request gets an error, a notification nothing.
func (b *backendSide) answer(f *tap.Frame) (lines [][]byte, resp []byte, status int) {
	f.Decode()
	if _, ok := f.Msg.(*tap.Request); !ok {
		return nil, nil, http.StatusAccepted // a notification, or not a request at all: no answer (AHP-RPC-002)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.matcher.Find(f)
	if st == nil {
		b.missed++
		desc := f.Method()
		if t, ok := f.Event().Get("type").Text(); ok {
			desc += " " + t
		}
		printable.Fprintf(b.p.Diag, "ahp-tap mock backend ▸ unmatched: %s: no recorded exchange matches (--match %s); answered with a JSON-RPC error\n",
			b.p.Audit.Text(desc+" id "+tap.IDText(f.RPCID())), b.p.Match)
		e := b.matcher.Unmatched(f)
		return [][]byte{append(bytes.Clone(e), '\n')}, e, http.StatusOK
	}
	b.served++
	if st.Response == nil {
		printable.Fprintf(b.p.Diag, "ahp-tap mock backend ▸ %s was never answered in the recording; no answer sent\n", st.Describe())
		return nil, nil, http.StatusNoContent
	}
	resp = Answer(st, f)
	respLine := Line(&tap.Frame{Raw: resp, Framing: st.Response.Framing})
	sent := false
	for _, o := range st.Output {
		switch {
		case o == st.Response:
			lines, sent = append(lines, respLine), true
		case isResponse(o):
			// The answer to another request, pipelined: it goes with its own.
		default:
			lines = append(lines, Line(b.p.Rec.Frame(o)))
		}
	}
	if !sent {
		lines = append(lines, respLine)
	}
	return lines, resp, http.StatusOK
}

func isResponse(f *tap.Frame) bool {
	_, ok := f.Msg.(*tap.Response)
	return ok
}

// ServeStdio answers one harness on in/out until in ends; conn names the
// link in the audit.
func (p *Peer) ServeStdio(in io.Reader, out io.Writer, conn string) (Result, error) {
	b := &backendSide{p: p, matcher: NewMatcher(p.Rec, p.Match, p.Ignore)}
	s := p.Session
	s.Note(tap.Note{Kind: tap.NoteStart, Time: time.Now(), Conn: conn, Detail: "ahp-tap mock backend"})
	w := bufio.NewWriter(out)
	emit := func(p []byte) {
		w.Write(p)
		w.Flush()
		s.Stream(conn, tap.FromBackend, time.Now(), p)
	}
	for _, line := range p.Rec.Prelude {
		emit(line)
	}
	// A line is kept up to MaxBody bytes (tap.Splitter, as the stdio
	// tap cuts lines): a longer one is audited as truncated and not
	// answered, never held whole (a 2 GiB line without "\n" was).
	sp := &tap.Splitter{Max: MaxBody, Emit: func(line []byte, _ tap.Framing, size int, truncated bool) {
		if truncated {
			printable.Fprintf(p.Diag, "ahp-tap mock backend ▸ a harness line of %d bytes is longer than the %d the mock reads; not answered\n", size, MaxBody)
			return
		}
		lines, _, _ := b.answer(&tap.Frame{Raw: bytes.Clone(line)})
		for _, line := range lines {
			emit(line)
		}
	}}
	buf := make([]byte, 1<<16)
	for {
		n, err := in.Read(buf)
		// Line by line, so that the audit sees each request before its
		// answer, as the wire had them.
		for q := buf[:n]; len(q) > 0; {
			seg := q
			if i := bytes.IndexByte(q, '\n'); i >= 0 {
				seg = q[:i+1]
			}
			s.Stream(conn, tap.FromHarness, time.Now(), seg)
			sp.Write(seg)
			q = q[len(seg):]
		}
		if err != nil {
			break
		}
	}
	sp.Close()
	now := time.Now()
	s.Note(tap.Note{Kind: tap.NoteEOF, Time: now, Conn: conn, Dir: tap.FromHarness})
	s.Note(tap.Note{Kind: tap.NoteEOF, Time: now, Conn: conn, Dir: tap.FromBackend})
	s.Note(tap.Note{Kind: tap.NoteExit, Time: now, Conn: conn})
	return Result{Failures: b.missed, What: fmt.Sprintf("%d requests answered from the recording, %d unmatched", b.served, b.missed)}, nil
}

// ServeHTTP answers harnesses over HTTP on ln until ctx ends; a request
// (head and body) must arrive within readTimeout.
func (p *Peer) ServeHTTP(ctx context.Context, ln net.Listener, readTimeout time.Duration) (Result, error) {
	b := &backendSide{p: p, matcher: NewMatcher(p.Rec, p.Match, p.Ignore)}
	aud := p.Session.Audit(tap.AuditorConfig{Queue: auditQueue})
	var conns atomic.Uint64
	type connKey struct{}
	srv := &http.Server{
		ReadHeaderTimeout: min(10*time.Second, readTimeout),
		// A body trickled in byte by byte holds a connection no longer than
		// this (200 slow-body connections were still open after 25 s).
		ReadTimeout: readTimeout,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, tap.HTTPConn(conns.Add(1)))
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			start := time.Now()
			conn, _ := req.Context().Value(connKey{}).(string)
			if req.Method != http.MethodPost {
				w.Header().Set("Allow", http.MethodPost)
				http.Error(w, "AHP over HTTP is one JSON-RPC message per POST", http.StatusMethodNotAllowed)
				return
			}
			body, err := io.ReadAll(io.LimitReader(req.Body, MaxBody))
			if err != nil {
				return
			}
			reqFrame := p.Audit.Frame(tap.FromHarness, start, conn, httpaudit.Body{Bytes: body}, p.Audit.Request(req.Method, req.URL, req.Header, ""))
			_, resp, status := b.answer(&tap.Frame{Raw: body})
			items := []tap.Item{{Frame: reqFrame}}
			if resp != nil {
				w.Header().Set("Content-Type", "application/json")
			}
			rmeta := p.Audit.Response(status, w.Header(), "", time.Since(start))
			if resp != nil {
				items = append(items, tap.Item{Frame: p.Audit.Frame(tap.FromBackend, time.Now(), conn, httpaudit.Body{Bytes: resp}, rmeta)})
			} else {
				items = append(items, tap.Item{Note: p.Audit.ResponseNote(time.Now(), conn, httpaudit.Body{}, rmeta)})
			}
			w.WriteHeader(status)
			w.Write(resp)
			aud.SubmitAll(items...)
		}),
	}
	printable.Fprintf(p.Diag, "ahp-tap mock backend: serving %d recorded harness messages on http://%s/\n", len(p.Rec.Steps), ln.Addr())
	done := make(chan error, 1) // receives Serve's result
	go func() { done <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(sctx)
		cancel()
		<-done
	case err = <-done:
	}
	aud.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return Result{}, fmt.Errorf("mock backend: %w", err)
	}
	return Result{Failures: b.missed, What: fmt.Sprintf("%d requests answered from the recording, %d unmatched", b.served, b.missed)}, nil
}

// harnessSide keeps what the backend answered, by request id, for the
// comparison.
type harnessSide struct {
	p   *Peer
	got map[string][]*tap.Frame // responses by id key, in arrival order
}

// take records a backend frame; it reports whether it answers key.
func (h *harnessSide) take(f *tap.Frame, key string) bool {
	f.Decode()
	resp, ok := f.Msg.(*tap.Response)
	if !ok {
		return false
	}
	k := tap.IDKey(resp.ID)
	h.got[k] = append(h.got[k], f)
	return k == key
}

// compare reports every step whose answer differs from the recording and
// returns how many do. Answers to one id are taken in order, so a
// recorded retry is compared with the second answer.
func (h *harnessSide) compare() int {
	differing := 0
	for _, st := range h.p.Rec.Steps {
		if st.Notification() {
			continue
		}
		k := tap.IDKey(st.ID)
		var got *tap.Frame
		if q := h.got[k]; len(q) > 0 {
			got, h.got[k] = q[0], q[1:]
		}
		diffs := answers.Diff(h.p.Rec.Frame(st.Response), got, h.p.Ignore)
		if len(diffs) == 0 {
			continue
		}
		differing++
		printable.Fprintf(h.p.Diag, "ahp-tap mock harness ▸ difference: %s\n", h.p.Audit.Text(st.Describe()))
		for _, d := range diffs {
			printable.Fprintf(h.p.Diag, "    %s\n", h.p.Audit.Text(fmt.Sprint(d)))
		}
	}
	return differing
}

// backendLines reads a backend's stdout, one line per element, and closes
// the channel at EOF.
type backendLines struct {
	ch chan []byte // closed at the backend's EOF
}

func (b *backendLines) read(r io.Reader) {
	defer close(b.ch)
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			b.ch <- line
		}
		if err != nil {
			return
		}
	}
}

// PlayStdio plays the recording to backend processes argv on their stdin
// and stdout, waiting at most wait for each answer: one process for the
// whole session, or one per message when the hook's lifecycle is
// per_event. A first process that cannot start is a *StartError.
func (p *Peer) PlayStdio(ctx context.Context, argv []string, stderr io.Writer, wait time.Duration) (Result, error) {
	h := &harnessSide{p: p, got: map[string][]*tap.Frame{}}
	groups := [][]*Step{p.Rec.Steps}
	if p.Session.Config().Resolved().Lifecycle == tap.LifecyclePerEvent {
		groups = nil
		for _, st := range p.Rec.Steps {
			groups = append(groups, []*Step{st})
		}
	}
	failed := 0
	for i, g := range groups {
		if ctx.Err() != nil {
			break
		}
		if err := p.playProcess(ctx, argv, stderr, g, h, wait); err != nil {
			if i == 0 {
				return Result{}, &StartError{Err: err}
			}
			printable.Fprintf(p.Diag, "ahp-tap mock harness: cannot start the backend for %s: %v\n", g[0].Describe(), err)
			failed++
		}
	}
	differing := h.compare()
	return Result{Failures: differing + failed, What: fmt.Sprintf("%d answers compared, %d differ from the recording", answered(p.Rec), differing)}, nil
}

// playProcess starts one backend process, plays steps to it, one message
// after the other (waiting for each answer the recording has), closes its
// stdin and waits for it to end.
func (p *Peer) playProcess(ctx context.Context, argv []string, stderr io.Writer, steps []*Step, h *harnessSide, wait time.Duration) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	toBackend, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	fromBackend, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	conn := fmt.Sprintf("stdio:%d", cmd.Process.Pid)
	s := p.Session
	lines := &backendLines{ch: make(chan []byte, 64)}
	go lines.read(fromBackend)
	s.Note(tap.Note{Kind: tap.NoteStart, Time: time.Now(), Conn: conn, Detail: fmt.Sprintf("pid %d", cmd.Process.Pid)})
	eof := false
	// await feeds the backend's lines to the audit until the answer to
	// key (if key is not ""), EOF or the deadline.
	await := func(key string, d time.Duration) {
		timer := time.NewTimer(d)
		defer timer.Stop()
		for !eof {
			select {
			case line, ok := <-lines.ch:
				if !ok {
					eof = true
					s.Note(tap.Note{Kind: tap.NoteEOF, Time: time.Now(), Conn: conn, Dir: tap.FromBackend})
					return
				}
				s.Stream(conn, tap.FromBackend, time.Now(), line)
				f := &tap.Frame{Raw: bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))}
				if h.take(f, key) && key != "" {
					return
				}
			case <-timer.C:
				return
			case <-ctx.Done():
				return
			}
		}
	}
	for _, st := range steps {
		if ctx.Err() != nil {
			break
		}
		line := Line(p.Rec.Frame(st.Request))
		if _, err := toBackend.Write(line); err != nil {
			printable.Fprintf(p.Diag, "ahp-tap mock harness: the backend stopped reading at %s: %v\n", st.Describe(), err)
			break
		}
		s.Stream(conn, tap.FromHarness, time.Now(), line)
		if st.Response != nil {
			await(tap.IDKey(st.ID), wait)
		}
	}
	toBackend.Close()
	s.Note(tap.Note{Kind: tap.NoteEOF, Time: time.Now(), Conn: conn, Dir: tap.FromHarness})
	await("", wait) // what the backend still says before it ends
	if !eof {
		// The backend did not end when its stdin did: SIGTERM to its
		// process group, SIGKILL if that is not enough; Wait (WaitDelay)
		// then closes its stdout, which ends the reader.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		await("", stopGrace)
		if !eof {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	werr := cmd.Wait()
	for line := range lines.ch {
		s.Stream(conn, tap.FromBackend, time.Now(), line)
	}
	if !eof {
		s.Note(tap.Note{Kind: tap.NoteEOF, Time: time.Now(), Conn: conn, Dir: tap.FromBackend})
	}
	exit := tap.Note{Kind: tap.NoteExit, Time: time.Now(), Conn: conn}
	if cmd.ProcessState != nil {
		exit.ExitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exit.ExitCode, exit.Signal = -1, ws.Signal().String()
		}
	} else if werr != nil {
		printable.Fprintf(p.Diag, "ahp-tap mock harness: waiting for the backend: %v\n", werr)
	}
	s.Note(exit)
	return nil
}

// answered counts the recording's requests.
func answered(rec *Recording) int {
	n := 0
	for _, st := range rec.Steps {
		if !st.Notification() {
			n++
		}
	}
	return n
}

// PlayHTTP plays the recording to the HTTP backend at url, one POST per
// message, with "Authorization: Bearer token" when token is not "".
func (p *Peer) PlayHTTP(ctx context.Context, url, token string, wait time.Duration) (Result, error) {
	s := p.Session
	h := &harnessSide{p: p, got: map[string][]*tap.Frame{}}
	client := &http.Client{Timeout: wait, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	conn := tap.HTTPConn(1)
	failed := 0
	for _, st := range p.Rec.Steps {
		if ctx.Err() != nil {
			break
		}
		raw := p.Rec.Frame(st.Request).Raw
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
		if err != nil {
			return Result{}, fmt.Errorf("mock harness: --url: %v", p.Audit.Text(err.Error()))
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		start := time.Now()
		// AHP-AUTH-001: the audit copy is the HTTP tap's: the token, the
		// URL's credentials and every escaped form of them redacted.
		reqMeta := p.Audit.Request(http.MethodPost, req.URL, req.Header, "")
		s.Frame(p.Audit.Frame(tap.FromHarness, start, conn, httpaudit.Body{Bytes: raw}, reqMeta))
		resp, err := client.Do(req)
		if err != nil {
			failed++
			detail := p.Audit.Text(err.Error())
			printable.Fprintf(p.Diag, "ahp-tap mock harness: %s: %s\n", p.Audit.Text(st.Describe()), detail)
			s.Note(tap.Note{Kind: tap.NoteUpstreamFailure, Time: time.Now(), Conn: conn, Detail: detail})
			continue
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
		resp.Body.Close()
		meta := p.Audit.Response(resp.StatusCode, resp.Header, "", time.Since(start))
		if rerr != nil || resp.StatusCode != http.StatusOK || len(body) == 0 {
			s.Note(*p.Audit.ResponseNote(time.Now(), conn, httpaudit.Body{Bytes: body}, meta))
			continue
		}
		f := p.Audit.Frame(tap.FromBackend, time.Now(), conn, httpaudit.Body{Bytes: body}, meta)
		s.Frame(f)
		h.take(f, "")
	}
	differing := h.compare()
	return Result{Failures: differing + failed, What: fmt.Sprintf("%d answers compared, %d differ from the recording", answered(p.Rec), differing)}, nil
}
