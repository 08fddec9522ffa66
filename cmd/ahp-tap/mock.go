package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ahp-tap/ahp-tap/answers"
	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/mock"
	"github.com/ahp-tap/ahp-tap/output"
	"github.com/ahp-tap/ahp-tap/tap"
)

const mockUsage = `usage: ahp-tap mock backend [flags] (--stdio | --listen ADDR) CAPTURE
       ahp-tap mock harness [flags] CAPTURE -- BACKEND [ARGS...]
       ahp-tap mock harness [flags] --url URL CAPTURE`

// mockMaxBody caps one HTTP body a mock side reads.
const mockMaxBody = 16 << 20

// mockReadTimeout is how long a harness may take to send one request, head
// and body, to mock backend --listen (--read-timeout).
const mockReadTimeout = 30 * time.Second

// mockClose bounds the flushing of a mock's log at its end.
const mockClose = 10 * time.Second

// mockStopGrace is how long mock harness waits for a backend to end after
// SIGTERM before it kills the backend's process group.
const mockStopGrace = 5 * time.Second

// mockFlags are the flags both sides of `ahp-tap mock` share.
type mockFlags struct {
	engineFlags
	match         string
	ignore        pointerList
	allowRedacted bool
	logPath       string
	failOn        string
	quiet         bool
}

// pointerList is a repeatable JSON Pointer flag.
type pointerList []mock.Pointer

func (p *pointerList) String() string { return fmt.Sprint(len(*p)) }

func (p *pointerList) Set(s string) error {
	ptr, err := mock.ParsePointer(s)
	if err != nil {
		return err
	}
	*p = append(*p, ptr)
	return nil
}

func (mf *mockFlags) register(fs *flag.FlagSet) {
	mf.engineFlags.register(fs)
	fs.StringVar(&mf.match, "match", "strict", "how a request matches a recorded one, `strict|shape`: strict compares the event's content, shape only its members and their kinds (volatile ids, times, source and protocolVersion are never compared)")
	fs.Var(&mf.ignore, "ignore", "leave the member at JSON `POINTER` out of matching (backend) or of the comparison (harness); repeatable; * matches any one token")
	fs.BoolVar(&mf.allowRedacted, "allow-redacted", false, "use a capture whose bodies hold redacted credentials (the placeholder is sent as recorded)")
	fs.StringVar(&mf.logPath, "log", "", "also append the audit's findings to the violation log at `PATH`")
	fs.StringVar(&mf.failOn, "fail-on", "error", "exit 1 when a finding at or above `LEVEL` exists: error, warn, info or never")
	fs.BoolVar(&mf.quiet, "quiet", false, "do not print each finding on stderr (the summary and the mock's own results still are)")
}

// mockRun is what both sides share once the flags are read: the recording,
// the audit's session and where findings go.
type mockRun struct {
	name      string // "mock backend" or "mock harness"
	rec       *mock.Recording
	match     mock.Match
	ignore    []mock.Pointer
	threshold tap.Level // 0: never fail on findings
	session   *tap.Session
	out       *output.Output // the way out: the findings' lines on stderr, --log
	diag      *lockedWriter  // stderr: findings, the mock's results, the summary
	// audit builds the audit copy of HTTP exchanges as the HTTP tap does,
	// and redacts the credentials it has seen from every line written.
	audit httpaudit.Builder
}

// runMock dispatches `ahp-tap mock backend|harness`.
func (m *Main) runMock(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError("mock: backend or harness? (run 'ahp-tap mock -h')")
	}
	switch args[0] {
	case "backend":
		return m.runMockBackend(ctx, args[1:])
	case "harness":
		return m.runMockHarness(ctx, args[1:])
	case "-h", "--help", "help":
		printHelp(m.Stdout, "mock", nil)
		return nil
	}
	return usageError("mock: %q is not backend or harness (run 'ahp-tap mock -h')", args[0])
}

// prepare reads the capture and builds the audit session for transport.
func (m *Main) prepareMock(name string, fs *flag.FlagSet, mf *mockFlags, capturePath string, transport tap.Transport, conn string) (*mockRun, error) {
	match, err := mock.ParseMatch(mf.match)
	if err != nil {
		return nil, usageError("%s: %v", name, err)
	}
	var threshold tap.Level
	if mf.failOn != "never" {
		if threshold, err = tap.ParseLevel(mf.failOn); err != nil {
			return nil, usageError("--fail-on %q is not error, warn, info or never", mf.failOn)
		}
	}
	l, err := mf.load()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(capturePath)
	if err != nil {
		return nil, usageError("%s: %v", name, err)
	}
	rec, err := mock.Load(f, mf.allowRedacted) // f stays open: the recording reads its frames from it
	if err != nil {
		f.Close()
		return nil, usageError("%s: %s: %v", name, capturePath, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg, err := rec.Header.Config(l.cfg, overridesOf(set))
	if err != nil {
		return nil, usageError("%s: %s: %v", name, capturePath, err)
	}
	cfg.Transport = transport
	r := &mockRun{name: name, rec: rec, match: match, ignore: mf.ignore, threshold: threshold,
		diag: &lockedWriter{w: m.Stderr}}
	// The way out (package output): each finding a line on stderr, its
	// credentials redacted as the audit copies are, and --log.
	oc := output.Config{Name: name, Diag: m.Stderr, Log: mf.logPath, Redact: r.audit.Text}
	if !mf.quiet {
		oc.Plain, oc.PlainPrefix = r.diag, "ahp-tap "+name+" ▸ "
	}
	if r.out, err = output.Open(oc); err != nil {
		return nil, usageError("%s: %v", name, err)
	}
	// A line's audit copy is capped as the stdio tap's.
	r.session = l.newSession(r.out.SessionConfig(tap.SessionConfig{Config: cfg, Conn: conn, MaxLine: mockMaxBody}))
	return r, nil
}

// finish closes the audit, prints the summary line and returns the exit
// error: 1 when the mock failed its job (failures > 0) or a finding at or
// above --fail-on exists.
func (r *mockRun) finish(failures int, what string) error {
	r.session.Close()
	if err := r.out.Close(time.Now().Add(mockClose)); err != nil {
		printable.Fprintf(r.diag, "ahp-tap %s: %v\n", r.name, err)
	}
	lc := r.out.Levels()
	printable.Fprintf(r.diag, "ahp-tap %s: %s; audit: %d findings (%d error, %d warn, %d info)\n",
		r.name, what, lc.Total(), lc.Error, lc.Warn, lc.Info)
	if failures > 0 || (r.threshold > 0 && lc.AtLeast(r.threshold) > 0) {
		return &exitError{code: 1}
	}
	return nil
}

// runMockBackend serves the backend side of a capture.
func (m *Main) runMockBackend(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mock backend", flag.ContinueOnError)
	var mf mockFlags
	mf.register(fs)
	useStdio := fs.Bool("stdio", false, "serve on standard input and output, as a stdio backend the harness starts")
	listen := fs.String("listen", "", "serve HTTP on `ADDR` (host:port), as an HTTP backend; loopback only unless --allow-remote")
	allowRemote := fs.Bool("allow-remote", false, "let --listen serve on an address other than loopback (anyone who can reach it may read the recording: tool inputs, file contents)")
	readTimeout := fs.Duration("read-timeout", mockReadTimeout, "with --listen: close a connection whose request (head and body) has not arrived within `DURATION`")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if *useStdio == (*listen != "") {
		return usageError("mock backend: give exactly one of --stdio and --listen ADDR (run 'ahp-tap mock -h')")
	}
	if fs.NArg() != 1 {
		return usageError("mock backend: one CAPTURE expected (run 'ahp-tap mock -h')")
	}
	if *useStdio {
		conn := fmt.Sprintf("stdio:%d", os.Getpid())
		r, err := m.prepareMock("mock backend", fs, &mf, fs.Arg(0), tap.Stdio, conn)
		if err != nil {
			return err
		}
		return r.serveStdio(m.Stdin, m.Stdout, conn)
	}
	if *readTimeout <= 0 {
		return usageError("mock backend: --read-timeout must be positive")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return usageError("mock backend: --listen: %v", err)
	}
	defer ln.Close()
	// Issue 28 item 11: the recording holds tool inputs and file contents;
	// off loopback it is served to everyone who can reach the address, so
	// that takes --allow-remote, as the HTTP tap's --forward and --metrics do.
	if !isLoopback(ln.Addr()) {
		if !*allowRemote {
			return usageError("mock backend: --listen on %s (not loopback) would serve the recording to everyone who can reach it; listen on 127.0.0.1, or give --allow-remote", ln.Addr())
		}
		printable.Fprintf(m.Stderr, "ahp-tap mock backend: WARNING: --allow-remote: the recording on %s is served to everyone who can reach that address\n", ln.Addr())
	}
	r, err := m.prepareMock("mock backend", fs, &mf, fs.Arg(0), tap.HTTP, "")
	if err != nil {
		return err
	}
	return r.serveHTTP(ctx, ln, *readTimeout)
}

// backendSide answers the harness's requests from the recording.
type backendSide struct {
	r       *mockRun
	matcher *mock.Matcher
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
		printable.Fprintf(b.r.diag, "ahp-tap mock backend ▸ unmatched: %s: no recorded exchange matches (--match %s); answered with a JSON-RPC error\n",
			b.r.audit.Text(desc+" id "+tap.IDText(f.RPCID())), b.r.match)
		e := b.matcher.Unmatched(f)
		return [][]byte{append(bytes.Clone(e), '\n')}, e, http.StatusOK
	}
	b.served++
	if st.Response == nil {
		printable.Fprintf(b.r.diag, "ahp-tap mock backend ▸ %s was never answered in the recording; no answer sent\n", st.Describe())
		return nil, nil, http.StatusNoContent
	}
	resp = mock.Answer(st, f)
	respLine := mock.Line(&tap.Frame{Raw: resp, Framing: st.Response.Framing})
	sent := false
	for _, o := range st.Output {
		switch {
		case o == st.Response:
			lines, sent = append(lines, respLine), true
		case isResponse(o):
			// The answer to another request, pipelined: it goes with its own.
		default:
			lines = append(lines, mock.Line(b.r.rec.Frame(o)))
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

// serveStdio answers one harness on in/out until in ends.
func (r *mockRun) serveStdio(in io.Reader, out io.Writer, conn string) error {
	b := &backendSide{r: r, matcher: mock.NewMatcher(r.rec, r.match, r.ignore)}
	s := r.session
	s.Note(tap.Note{Kind: tap.NoteStart, Time: time.Now(), Conn: conn, Detail: "ahp-tap mock backend"})
	w := bufio.NewWriter(out)
	emit := func(p []byte) {
		w.Write(p)
		w.Flush()
		s.Stream(conn, tap.FromBackend, time.Now(), p)
	}
	for _, p := range r.rec.Prelude {
		emit(p)
	}
	// A line is kept up to mockMaxBody bytes (tap.Splitter, as the stdio
	// tap cuts lines): a longer one is audited as truncated and not
	// answered, never held whole (a 2 GiB line without "\n" was).
	sp := &tap.Splitter{Max: mockMaxBody, Emit: func(line []byte, _ tap.Framing, size int, truncated bool) {
		if truncated {
			printable.Fprintf(r.diag, "ahp-tap mock backend ▸ a harness line of %d bytes is longer than the %d the mock reads; not answered\n", size, mockMaxBody)
			return
		}
		lines, _, _ := b.answer(&tap.Frame{Raw: bytes.Clone(line)})
		for _, p := range lines {
			emit(p)
		}
	}}
	buf := make([]byte, 1<<16)
	for {
		n, err := in.Read(buf)
		// Line by line, so that the audit sees each request before its
		// answer, as the wire had them.
		for p := buf[:n]; len(p) > 0; {
			seg := p
			if i := bytes.IndexByte(p, '\n'); i >= 0 {
				seg = p[:i+1]
			}
			s.Stream(conn, tap.FromHarness, time.Now(), seg)
			sp.Write(seg)
			p = p[len(seg):]
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
	return r.finish(b.missed, fmt.Sprintf("%d requests answered from the recording, %d unmatched", b.served, b.missed))
}

// serveHTTP answers harnesses over HTTP until ctx ends.
func (r *mockRun) serveHTTP(ctx context.Context, ln net.Listener, readTimeout time.Duration) error {
	b := &backendSide{r: r, matcher: mock.NewMatcher(r.rec, r.match, r.ignore)}
	aud := r.session.Audit(tap.AuditorConfig{Queue: httpAuditQueue})
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
			body, err := io.ReadAll(io.LimitReader(req.Body, mockMaxBody))
			if err != nil {
				return
			}
			reqFrame := r.audit.Frame(tap.FromHarness, start, conn, httpaudit.Body{Bytes: body}, r.audit.Request(req.Method, req.URL, req.Header, ""))
			_, resp, status := b.answer(&tap.Frame{Raw: body})
			items := []tap.Item{{Frame: reqFrame}}
			if resp != nil {
				w.Header().Set("Content-Type", "application/json")
			}
			rmeta := r.audit.Response(status, w.Header(), "", time.Since(start))
			if resp != nil {
				items = append(items, tap.Item{Frame: r.audit.Frame(tap.FromBackend, time.Now(), conn, httpaudit.Body{Bytes: resp}, rmeta)})
			} else {
				items = append(items, tap.Item{Note: r.audit.ResponseNote(time.Now(), conn, httpaudit.Body{}, rmeta)})
			}
			w.WriteHeader(status)
			w.Write(resp)
			aud.SubmitAll(items...)
		}),
	}
	printable.Fprintf(r.diag, "ahp-tap mock backend: serving %d recorded harness messages on http://%s/\n", len(r.rec.Steps), ln.Addr())
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
		return fmt.Errorf("mock backend: %w", err)
	}
	return r.finish(b.missed, fmt.Sprintf("%d requests answered from the recording, %d unmatched", b.served, b.missed))
}

// runMockHarness plays the harness side of a capture against a live
// backend and reports every answer that differs from the recording.
func (m *Main) runMockHarness(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mock harness", flag.ContinueOnError)
	var mf mockFlags
	mf.register(fs)
	url := fs.String("url", "", "play against the HTTP backend at `URL` instead of starting one")
	wait := fs.Duration("wait", 10*time.Second, "how long (`DURATION`) to wait for each answer")
	bearerEnv := fs.String("bearer-env", "", "with --url: send \"Authorization: Bearer\" with the credential held by environment variable `VAR` (never written to any output)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError("mock harness: no CAPTURE given (run 'ahp-tap mock -h')")
	}
	capturePath, argv := rest[0], rest[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if (*url == "") == (len(argv) == 0) {
		return usageError("mock harness: give either -- BACKEND [ARGS...] or --url URL (run 'ahp-tap mock -h')")
	}
	if *wait <= 0 {
		return usageError("mock harness: --wait must be positive")
	}
	if *url != "" {
		r, err := m.prepareMock("mock harness", fs, &mf, capturePath, tap.HTTP, "")
		if err != nil {
			return err
		}
		token := ""
		if *bearerEnv != "" {
			if token = os.Getenv(*bearerEnv); token == "" {
				return usageError("mock harness: --bearer-env: $%s is empty or not set", *bearerEnv)
			}
		}
		return r.playHTTP(ctx, *url, token, *wait)
	}
	r, err := m.prepareMock("mock harness", fs, &mf, capturePath, tap.Stdio, "")
	if err != nil {
		return err
	}
	return r.playStdio(ctx, argv, m.Stderr, *wait)
}

// harnessSide keeps what the backend answered, by request id, for the
// comparison.
type harnessSide struct {
	r   *mockRun
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
	for _, st := range h.r.rec.Steps {
		if st.Notification() {
			continue
		}
		k := tap.IDKey(st.ID)
		var got *tap.Frame
		if q := h.got[k]; len(q) > 0 {
			got, h.got[k] = q[0], q[1:]
		}
		diffs := answers.Diff(h.r.rec.Frame(st.Response), got, h.r.ignore)
		if len(diffs) == 0 {
			continue
		}
		differing++
		printable.Fprintf(h.r.diag, "ahp-tap mock harness ▸ difference: %s\n", h.r.audit.Text(st.Describe()))
		for _, d := range diffs {
			printable.Fprintf(h.r.diag, "    %s\n", h.r.audit.Text(fmt.Sprint(d)))
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

// playStdio plays the recording to backend processes on their stdin and
// stdout: one process for the whole session, or one per message when the
// hook's lifecycle is per_event (from the capture's registration, or
// --registration/--hook).
func (r *mockRun) playStdio(ctx context.Context, argv []string, stderr io.Writer, wait time.Duration) error {
	h := &harnessSide{r: r, got: map[string][]*tap.Frame{}}
	groups := [][]*mock.Step{r.rec.Steps}
	if r.session.Config().Resolved().Lifecycle == tap.LifecyclePerEvent {
		groups = nil
		for _, st := range r.rec.Steps {
			groups = append(groups, []*mock.Step{st})
		}
	}
	failed := 0
	for i, g := range groups {
		if ctx.Err() != nil {
			break
		}
		if err := r.playProcess(ctx, argv, stderr, g, h, wait); err != nil {
			if i == 0 {
				r.session.Close()
				return usageError("mock harness: cannot start the backend: %v", err)
			}
			printable.Fprintf(r.diag, "ahp-tap mock harness: cannot start the backend for %s: %v\n", g[0].Describe(), err)
			failed++
		}
	}
	differing := h.compare()
	return r.finish(differing+failed, fmt.Sprintf("%d answers compared, %d differ from the recording", answered(r.rec), differing))
}

// playProcess starts one backend process, plays steps to it, one message
// after the other (waiting for each answer the recording has), closes its
// stdin and waits for it to end.
func (r *mockRun) playProcess(ctx context.Context, argv []string, stderr io.Writer, steps []*mock.Step, h *harnessSide, wait time.Duration) error {
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
	s := r.session
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
		p := mock.Line(r.rec.Frame(st.Request))
		if _, err := toBackend.Write(p); err != nil {
			printable.Fprintf(r.diag, "ahp-tap mock harness: the backend stopped reading at %s: %v\n", st.Describe(), err)
			break
		}
		s.Stream(conn, tap.FromHarness, time.Now(), p)
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
		await("", mockStopGrace)
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
		printable.Fprintf(r.diag, "ahp-tap mock harness: waiting for the backend: %v\n", werr)
	}
	s.Note(exit)
	return nil
}

// answered counts the recording's requests.
func answered(rec *mock.Recording) int {
	n := 0
	for _, st := range rec.Steps {
		if !st.Notification() {
			n++
		}
	}
	return n
}

// playHTTP plays the recording to the HTTP backend at url, one POST per
// message.
func (r *mockRun) playHTTP(ctx context.Context, url, token string, wait time.Duration) error {
	s := r.session
	h := &harnessSide{r: r, got: map[string][]*tap.Frame{}}
	client := &http.Client{Timeout: wait, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	conn := tap.HTTPConn(1)
	failed := 0
	for _, st := range r.rec.Steps {
		if ctx.Err() != nil {
			break
		}
		raw := r.rec.Frame(st.Request).Raw
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
		if err != nil {
			return usageError("mock harness: --url: %v", r.audit.Text(err.Error()))
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		start := time.Now()
		// AHP-AUTH-001: the audit copy is the HTTP tap's: the token, the
		// URL's credentials and every escaped form of them redacted.
		reqMeta := r.audit.Request(http.MethodPost, req.URL, req.Header, "")
		s.Frame(r.audit.Frame(tap.FromHarness, start, conn, httpaudit.Body{Bytes: raw}, reqMeta))
		resp, err := client.Do(req)
		if err != nil {
			failed++
			detail := r.audit.Text(err.Error())
			printable.Fprintf(r.diag, "ahp-tap mock harness: %s: %s\n", r.audit.Text(st.Describe()), detail)
			s.Note(tap.Note{Kind: tap.NoteUpstreamFailure, Time: time.Now(), Conn: conn, Detail: detail})
			continue
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, mockMaxBody))
		resp.Body.Close()
		meta := r.audit.Response(resp.StatusCode, resp.Header, "", time.Since(start))
		if rerr != nil || resp.StatusCode != http.StatusOK || len(body) == 0 {
			s.Note(*r.audit.ResponseNote(time.Now(), conn, httpaudit.Body{Bytes: body}, meta))
			continue
		}
		f := r.audit.Frame(tap.FromBackend, time.Now(), conn, httpaudit.Body{Bytes: body}, meta)
		s.Frame(f)
		h.take(f, "")
	}
	differing := h.compare()
	return r.finish(differing+failed, fmt.Sprintf("%d answers compared, %d differ from the recording", answered(r.rec), differing))
}
