package auditlink

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/clocktest"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// collect is a session whose frames and notes are recorded and whose
// findings are kept.
type collect struct {
	mu       sync.Mutex
	frames   []string // "dir raw"
	notes    []tap.Note
	findings []tap.Finding
}

func (c *collect) Record(f *tap.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames = append(c.frames, f.Dir.String()+" "+string(f.Raw))
}

func (c *collect) RecordNote(n tap.Note) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n)
}

func (c *collect) Write(f tap.Finding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.findings = append(c.findings, f)
}

func (c *collect) kinds() []tap.NoteKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []tap.NoteKind
	for _, n := range c.notes {
		out = append(out, n.Kind)
	}
	return out
}

func (c *collect) dropped() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for _, x := range c.notes {
		if x.Kind == tap.NoteDropped {
			n += x.Count
		}
	}
	return n
}

func newSession(c *collect) *tap.Session {
	return tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Sink: c, Recorder: c, Conn: "stdio:1"})
}

// record encodes one record as a Mirror writes it.
func record(kind byte, dir tap.Direction, flags byte, lost uint64, payload []byte) []byte {
	b := make([]byte, recordHeader+len(payload))
	b[0], b[1], b[2] = kind, byte(dir), flags
	binary.LittleEndian.PutUint32(b[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(b[8:], uint64(time.Unix(1700000000, 0).UnixNano()))
	binary.LittleEndian.PutUint64(b[24:], lost)
	copy(b[recordHeader:], payload)
	return b
}

func endRecord(t *testing.T, deadline time.Time) []byte {
	t.Helper()
	var buf bytes.Buffer
	res := stdio.Result{ExitCode: 0, Deadline: deadline}
	b, err := jsonMarshal(res)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(record(RecordEnd, 0, 0, 0, b))
	return buf.Bytes()
}

const (
	req  = `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{}}`
	resp = `{"jsonrpc":"2.0","id":"e1","result":{}}`
)

// Framing: lines split across records are cut into whole frames by the
// session's own framer; the end record makes the link clean (no killed
// note), and a link without it is killed.
func TestFeedFramesAcrossRecordsAndEnds(t *testing.T) {
	for _, clean := range []bool{true, false} {
		var link bytes.Buffer
		link.Write(record(RecordChunk, tap.FromHarness, 0, 0, []byte(req[:10])))
		link.Write(record(RecordChunk, tap.FromHarness, 0, 0, []byte(req[10:]+"\n")))
		link.Write(record(RecordChunk, tap.FromBackend, 0, 0, []byte(resp+"\n")))
		if clean {
			link.Write(endRecord(t, time.Now().Add(time.Hour)))
		}
		c := &collect{}
		s := newSession(c)
		out := Feed(NewReader(&link, ReaderConfig{}), s, "stdio:1", 0)
		s.Close()
		want := []string{"harness " + req, "backend " + resp}
		if strings.Join(c.frames, "\n") != strings.Join(want, "\n") {
			t.Errorf("clean=%v: frames %q, want %q", clean, c.frames, want)
		}
		killed := strings.Contains(strings.Join(stringsOf(c.kinds()), " "), string(tap.NoteKilled))
		if out.Clean != clean || killed == clean {
			t.Errorf("clean=%v: outcome clean %v, killed note %v", clean, out.Clean, killed)
		}
	}
}

func stringsOf(ks []tap.NoteKind) []string {
	var out []string
	for _, k := range ks {
		out = append(out, string(k))
	}
	return out
}

// A hostile or broken writer: a record longer than MaxRecord, or a link
// cut in the middle of a record, ends the link there (the records before
// are checked, a killed note is recorded) instead of being believed.
func TestFeedRefusesOversizedAndCutRecords(t *testing.T) {
	over := record(RecordChunk, tap.FromHarness, 0, 0, nil)
	binary.LittleEndian.PutUint32(over[4:], MaxRecord+1)
	cut := record(RecordChunk, tap.FromBackend, 0, 0, []byte(resp+"\n"))
	for name, tail := range map[string][]byte{"oversized": over, "cut": cut[:len(cut)-5]} {
		var link bytes.Buffer
		link.Write(record(RecordChunk, tap.FromHarness, 0, 0, []byte(req+"\n")))
		link.Write(tail)
		if name == "oversized" {
			link.Write(endRecord(t, time.Now().Add(time.Hour))) // never reached
		}
		c := &collect{}
		s := newSession(c)
		out := Feed(NewReader(&link, ReaderConfig{}), s, "stdio:1", 0)
		s.Close()
		if out.Clean || len(c.frames) != 1 {
			t.Errorf("%s: clean %v, frames %q; want the first frame only, and the link not clean", name, out.Clean, c.frames)
		}
		kinds := strings.Join(stringsOf(c.kinds()), " ")
		if !strings.Contains(kinds, "killed") {
			t.Errorf("%s: notes %s, want a killed note", name, kinds)
		}
		if name == "oversized" && !strings.Contains(kinds, "upstream_failure") {
			t.Errorf("oversized: notes %s, want the reading failure said", kinds)
		}
	}
}

// A Reader never leaves the link full: past its bound it drops chunks and
// counts their lines, and the next record of that direction carries the
// loss, so the session resynchronises the stream and reports every line
// not audited (TAP-1). Every line is either a frame or counted.
func TestReaderDropsPastItsBoundAndCounts(t *testing.T) {
	pr, pw := io.Pipe()
	rd := NewReader(pr, ReaderConfig{Depth: 4, Bytes: 1 << 20})
	const n = 100
	go func() {
		for i := range n {
			line := req + "\n"
			if i%3 == 0 {
				line = resp + "\n" + resp[:7] // a line cut across chunks
			} else if i%3 == 1 {
				line = resp[7:] + "\n"
			}
			dir := tap.FromHarness
			if i%3 != 2 {
				dir = tap.FromBackend
			}
			pw.Write(record(RecordChunk, dir, 0, 0, []byte(line)))
		}
		pw.Write(endRecord(t, time.Now().Add(time.Hour)))
		pw.Close()
	}()
	// Nobody takes records until the link has ended: the reader must
	// have read it all (it does not wait for room).
	for rd.Deadline().IsZero() {
		time.Sleep(time.Millisecond)
	}
	if rd.Dropped() == 0 {
		t.Fatalf("a reader bounded at 4 records dropped none of %d", n)
	}
	c, s := feedEnded(t, rd)
	lines := uint64(0)
	for i := range n {
		if i%3 != 0 {
			lines++ // a harness line, or the end of a cut backend line
		} else {
			lines++ // the whole backend line
		}
	}
	if got := uint64(len(c.frames)) + s.NotAudited(); got != lines || s.NotAudited() == 0 {
		t.Errorf("%d frames + %d not audited = %d, want every one of %d lines, some not audited", len(c.frames), s.NotAudited(), got, lines)
	}
	if c.dropped() != s.NotAudited() {
		t.Errorf("the recording's dropped notes say %d, the session %d", c.dropped(), s.NotAudited())
	}
	tap1 := 0
	for _, f := range c.findings {
		if f.Check == "TAP-1" {
			tap1++
		}
	}
	if tap1 != 1 {
		t.Errorf("%d TAP-1 findings, want 1", tap1)
	}
}

// Past the end record's deadline (less the reserve), Feed checks no more:
// the lines left are counted as not audited, the notes are still fed, and
// the link is clean (never a kill).
func TestFeedAbandonsPastTheDeadlineAndCounts(t *testing.T) {
	var link bytes.Buffer
	const n = 50
	for range n {
		link.Write(record(RecordChunk, tap.FromHarness, 0, 0, []byte(req+"\n")))
	}
	eof, _ := jsonMarshal(tap.Note{Kind: tap.NoteEOF, Dir: tap.FromHarness, Conn: "stdio:1"})
	link.Write(record(RecordNote, tap.FromHarness, 0, 0, eof))
	link.Write(endRecord(t, time.Now().Add(-time.Second))) // the deadline has passed
	rd := NewReader(&link, ReaderConfig{})
	for rd.Deadline().IsZero() {
		time.Sleep(time.Millisecond)
	}
	c := &collect{}
	s := newSession(c)
	out := Feed(rd, s, "stdio:1", 0)
	s.Close()
	if !out.Clean || out.Abandoned != n || s.NotAudited() != n || len(c.frames) != 0 {
		t.Errorf("clean %v, abandoned %d, not audited %d, frames %d; want clean, all %d counted, none checked",
			out.Clean, out.Abandoned, s.NotAudited(), len(c.frames), n)
	}
	kinds := strings.Join(stringsOf(c.kinds()), " ")
	if !strings.Contains(kinds, "eof") || strings.Contains(kinds, "killed") {
		t.Errorf("notes %s: want the EOF fed and no killed note", kinds)
	}
}

// The hello: its version, key and size are checked, and what is wrong is
// said in the refusal.
func TestReadHello(t *testing.T) {
	cases := []struct {
		line, want string
	}{
		{`{"v":1,"key":"k","conn":"stdio:1"}` + "\n", ""},
		{`{"v":2,"key":"k","conn":"stdio:1"}` + "\n", "protocol version 2"},
		{`{"v":1,"key":"other","conn":"stdio:1"}` + "\n", "another audit configuration"},
		{`{"v":1,"key":"k","conn":""}` + "\n", "no link name"},
		{`{"v":1,"key":"k","conn":"stdio:1","extra":true}` + "\n", "bad hello"},
		{"not json\n", "bad hello"},
		{strings.Repeat("x", 3*MaxHello) + "\n", "longer than"},
		{`{"v":1,"key":"k"`, "no hello"},
	}
	for _, tc := range cases {
		_, err := ReadHello(bufio.NewReaderSize(strings.NewReader(tc.line), MaxHello), "k")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.40q: %v", tc.line, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%.40q: error %v, want %q", tc.line, err, tc.want)
		}
	}
}

// Messages over MaxMessage are refused both ways.
func TestMessagesBounded(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMsg(&b, MsgDiag, make([]byte, MaxMessage+1)); err == nil {
		t.Errorf("a message over the bound was written")
	}
	if err := WriteMsg(&b, MsgDiag, []byte("note\n")); err != nil {
		t.Fatal(err)
	}
	if k, p, err := ReadMsg(&b); err != nil || k != MsgDiag || string(p) != "note\n" {
		t.Errorf("round trip: %q %q %v", k, p, err)
	}
	var h [5]byte
	h[0] = MsgDiag
	binary.LittleEndian.PutUint32(h[1:], MaxMessage+1)
	if _, _, err := ReadMsg(bytes.NewReader(h[:])); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("an oversized message read: %v", err)
	}
}

// startServer runs a Server on a socket in a new directory, each link's
// audit a session recorded in a collect; it returns the rendezvous and
// the audits by link name.
func startServer(t *testing.T) (Rendezvous, func(conn string) *collect) {
	t.Helper()
	dir, err := os.MkdirTemp("", "al") // short: a socket path has ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := Rendezvous{Dir: dir, Key: "k", Argv: func(Paths) []string { return []string{"/nonexistent"} }}
	p := PathsFor(dir, r.Key)
	var mu sync.Mutex
	audits := map[string]*collect{}
	srv := &Server{Key: "k", Open: func(conn string, _ io.Writer) (*Audit, error) {
		c := &collect{}
		mu.Lock()
		audits[conn] = c
		mu.Unlock()
		return &Audit{Session: newSession(c)}, nil
	}}
	ready, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(p.Sock, p.Lock, readyW)
	if _, err := ready.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	ready.Close()
	return r, func(conn string) *collect {
		mu.Lock()
		defer mu.Unlock()
		return audits[conn]
	}
}

// A hostile peer (a bad hello, a hello of another protocol version, a
// link whose record is oversized) is refused or cut off, and the server
// goes on serving the next tap: a real Link over the real socket, whose
// frames reach that link's session and whose end is confirmed.
func TestServerSurvivesHostilePeersAndServesLinks(t *testing.T) {
	r, audit := startServer(t)
	p := PathsFor(r.Dir, r.Key)
	dialRaw := func() net.Conn {
		c, err := net.Dial("unix", p.Sock)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	for _, hello := range []string{`{"v":2,"key":"k","conn":"stdio:9"}` + "\n", strings.Repeat("{", 2*MaxHello)} {
		c := dialRaw()
		c.Write([]byte(hello))
		kind, payload, err := ReadMsg(c)
		if err != nil || kind != MsgRefused {
			t.Errorf("hello %.30q: answer %q %q %v, want a refusal", hello, kind, payload, err)
		}
		c.Close()
	}
	// A good hello, then a record over MaxRecord: the link is finished as
	// killed, and the server says it is done with it.
	c := dialRaw()
	WriteHello(c, Hello{V: Version, Key: "k", Conn: "stdio:7"})
	if kind, _, err := ReadMsg(c); err != nil || kind != MsgReady {
		t.Fatalf("good hello: %q %v", kind, err)
	}
	c.Write(record(RecordChunk, tap.FromHarness, 0, 0, []byte(req+"\n")))
	over := record(RecordChunk, tap.FromHarness, 0, 0, nil)
	binary.LittleEndian.PutUint32(over[4:], 1<<31)
	c.Write(over)
	if kind, _, err := ReadMsg(c); err != nil || kind != MsgDone {
		t.Errorf("after an oversized record: %q %v, want the link finished", kind, err)
	}
	c.Close()
	if a := audit("stdio:7"); a == nil || len(a.frames) != 1 || !strings.Contains(strings.Join(stringsOf(a.kinds()), " "), "killed") {
		t.Errorf("the hostile link's audit: %+v, want its one frame and a killed note", a)
	}

	// A real tap's link.
	link, err := r.Connect("stdio:8", 0)
	if err != nil {
		t.Fatal(err)
	}
	m := link.Mirror()
	t0 := time.Now()
	m.Chunk(tap.FromHarness, t0, []byte(req+"\n"))
	m.Chunk(tap.FromBackend, t0, []byte(resp+"\n"))
	e := link.End(stdio.Result{}, time.Now().Add(10*time.Second))
	if !e.Finished || e.Gone || e.Unsent != 0 {
		t.Errorf("ending: %+v, want finished", e)
	}
	if a := audit("stdio:8"); a == nil || len(a.frames) != 2 || strings.Contains(strings.Join(stringsOf(a.kinds()), " "), "killed") {
		t.Errorf("the tap's audit: %+v, want both frames and no killed note", a)
	}
}

// A server that accepts but never answers (stopped with SIGSTOP, hung)
// costs a tap one handshake's wait in all, not one per attempt: the tap
// connects once and gives up.
func TestConnectGivesUpOnceOnAServerThatDoesNotAnswer(t *testing.T) {
	dir, err := os.MkdirTemp("", "al")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	r := Rendezvous{Dir: dir, Key: "k", Argv: func(Paths) []string { return []string{"/nonexistent"} }}
	ln, err := net.Listen("unix", PathsFor(dir, "k").Sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read
		}
	}()
	_, err = r.connect("stdio:1", 0, time.Now().Add(300*time.Millisecond))
	ln.Close()
	<-done
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("connect: %v, want no answer", err)
	}
	if len(conns) != 1 {
		t.Errorf("the tap connected %d times to a server that does not answer, want once", len(conns))
	}
	for _, c := range conns {
		c.Close()
	}
}

// The rendezvous refuses a directory others may write to, and a symbolic
// link at the socket's path.
func TestRendezvousRefusesUnsafePaths(t *testing.T) {
	dir, err := os.MkdirTemp("", "al")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	var ref *RefusedError
	if _, err := (Rendezvous{Dir: open, Key: "k"}).Connect("stdio:1", 0); !errors.As(err, &ref) {
		t.Errorf("a world-writable directory: %v, want a refusal", err)
	}
	own := filepath.Join(dir, "own")
	os.Mkdir(own, 0o700)
	os.Symlink(filepath.Join(dir, "elsewhere"), PathsFor(own, "k").Sock)
	if _, err := (Rendezvous{Dir: own, Key: "k"}).Connect("stdio:1", 0); !errors.As(err, &ref) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link at the socket: %v, want a refusal naming the link", err)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// TestFeedAnswerAfterItsRequestWasDropped: the audit copy of a request
// was dropped and its answer's record is the next to arrive. The loss
// travels on that record (flagLossOther), so the conversation is an
// excerpt before the answer is judged: no CORR-2 "matches no request",
// which the tap's own drop would have caused. The same record without
// the loss (what the link carried before) shows the finding it prevents.
func TestFeedAnswerAfterItsRequestWasDropped(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flags     byte
		lost      uint64
		wantCORR2 bool
	}{
		{"loss carried on the answer's record", flagLossOther, 1, false},
		{"loss not yet known", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			rd := NewReader(pr, ReaderConfig{})
			go func() {
				pw.Write(record(RecordChunk, tap.FromBackend, tc.flags, tc.lost, []byte(resp+"\n")))
				pw.Write(endRecord(t, time.Now().Add(time.Hour)))
				pw.Close()
			}()
			c := &collect{}
			s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Rules: rules.Set(rules.Options{}),
				Sink: c, Recorder: c, Conn: "stdio:1"})
			Feed(rd, s, "stdio:1", 0)
			s.Close()
			corr2 := 0
			for _, f := range c.findings {
				if f.Check == "CORR-2" {
					corr2++
				}
			}
			if got := corr2 > 0; got != tc.wantCORR2 {
				t.Errorf("CORR-2 findings: %d, want any: %v (%v)", corr2, tc.wantCORR2, c.findings)
			}
			if s.NotAudited() != tc.lost {
				t.Errorf("not audited %d, want %d", s.NotAudited(), tc.lost)
			}
		})
	}
}

// TestReaderSkipsADroppedChunkLargerThanItsBuffer: a chunk dropped for
// want of room is skipped unread (not copied) however large, and its lines
// are still counted exactly, across the reader's 64 KiB buffer.
func TestReaderSkipsADroppedChunkLargerThanItsBuffer(t *testing.T) {
	pr, pw := io.Pipe()
	rd := NewReader(pr, ReaderConfig{Depth: 1, Bytes: 1 << 20})
	big := bytes.Repeat([]byte(strings.Repeat("x", 69)+"\n"), 3000) // 210,000 bytes, 3,000 lines
	go func() {
		pw.Write(record(RecordChunk, tap.FromHarness, 0, 0, []byte(req+"\n"))) // fills the queue
		pw.Write(record(RecordChunk, tap.FromHarness, 0, 0, big))              // no room: dropped
		pw.Write(endRecord(t, time.Now().Add(time.Hour)))
		pw.Close()
	}()
	for rd.Deadline().IsZero() {
		time.Sleep(time.Millisecond)
	}
	if rd.Dropped() != 1 {
		t.Fatalf("dropped %d chunks, want the big one", rd.Dropped())
	}
	c, s := feedEnded(t, rd)
	if len(c.frames) != 1 || s.NotAudited() != 3000 {
		t.Errorf("%d frames, %d not audited; want the request and 3000 lines not audited", len(c.frames), s.NotAudited())
	}
}

// feedEnded feeds the whole of a link that ends cleanly into a new
// session, closes it, and returns what it recorded.
func feedEnded(t *testing.T, rd *Reader) (*collect, *tap.Session) {
	t.Helper()
	c := &collect{}
	s := newSession(c)
	out := Feed(rd, s, "stdio:1", 0)
	s.Close()
	if !out.Clean {
		t.Errorf("the link ended cleanly, the outcome says not")
	}
	return c, s
}

// While the link is quiet (a pipe with nothing in it), Feed tells a
// session watched by a tap.Clocker the time, though no intercept is
// pending: the live conduct client's clock in an audit process. The time
// is behind the wall clock by the grace a line in transit gets.
func TestFeedTellsAClockerWhileQuiet(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	told := make(clocktest.Told, 1)
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Sink: &collect{}, Conn: "stdio:1", Watch: told})
	done := make(chan Outcome)
	go func() { done <- Feed(NewReader(pr, ReaderConfig{}), s, "stdio:1", 0) }()
	select {
	case got := <-told:
		if !got.Before(time.Now().Add(-tap.ClockGrace + time.Millisecond)) {
			t.Errorf("told %v: not behind the wall clock by the grace", got)
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a measurement
		t.Fatal("a quiet link's Clocker was never told the time")
	}
	pw.Close()
	<-done
}
