package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

func sample(i int) tap.Finding {
	return tap.Finding{Check: "BASE-2", Requirement: "AHP-VER-001", Rule: "BASE-2/version", Level: tap.Error,
		Message: "params.protocolVersion is \"v0\"; expected \"draft\".", Pointer: "/params/protocolVersion",
		Seq: uint64(i + 1), Dir: tap.FromHarness, Conn: "pid:42", RPCID: `"evt-1"`, EventID: "evt-1"}
}

func TestLogRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.log")
	var diag bytes.Buffer
	l, err := OpenLog(path, &diag)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(sample(0))
	l.Write(tap.Finding{Check: "CORR-2", Level: tap.Warn, Message: "end"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Write(sample(1)) // after Close: dropped, no panic
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("log mode = %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("log has %d lines, want 2:\n%s", len(lines), data)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"level": "error", "check": "BASE-2", "requirement": "AHP-VER-001", "rule": "BASE-2/version",
		"pointer": "/params/protocolVersion", "seq": float64(1), "direction": "harness", "conn": "pid:42",
		"rpcId": `"evt-1"`, "eventId": "evt-1", "message": "params.protocolVersion is \"v0\"; expected \"draft\"."}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("record[%q] = %v, want %v", k, rec[k], v)
		}
	}
	if _, ok := rec["time"].(string); !ok {
		t.Errorf("record has no time: %s", lines[0])
	}
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil || rec["level"] != "warn" {
		t.Errorf("second record = %s, want level warn", lines[1])
	}
	if diag.Len() != 0 {
		t.Errorf("diag = %q, want nothing", diag.String())
	}
	// Appending: a second open adds lines.
	l, _ = OpenLog(path, &diag)
	l.Write(sample(2))
	l.Close()
	data, _ = os.ReadFile(path)
	if n := bytes.Count(data, []byte("\n")); n != 3 {
		t.Errorf("after reopening, log has %d lines, want 3", n)
	}
}

func TestOpenLogMissingDir(t *testing.T) {
	_, err := OpenLog(filepath.Join(t.TempDir(), "no", "such", "v.log"), nil)
	if err == nil {
		t.Fatal("OpenLog(missing dir) = nil error, want one")
	}
}

// syncBuffer is a bytes.Buffer safe for the log goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogDevFullReportedOnce(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var diag syncBuffer
	// OpenLog refuses a device (TestOpenLogRefusesWhatWouldBlockOrLeak);
	// a write failure is reported once whatever the writer.
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLog(f, f, &diag)
	for i := range 100 {
		l.Write(sample(i))
	}
	l.Close()
	if !l.Failed() {
		t.Error("Failed() = false, want true")
	}
	if n := strings.Count(diag.String(), "\n"); n != 1 {
		t.Errorf("diag has %d lines, want 1: %q", n, diag.String())
	}
}

func TestLogStderr(t *testing.T) {
	var diag syncBuffer
	l, err := OpenLog("-", &diag)
	if err != nil {
		t.Fatal(err)
	}
	l.Write(sample(0))
	l.Close()
	if !strings.Contains(diag.String(), `"check":"BASE-2"`) {
		t.Errorf("stderr log = %q, want a BASE-2 record", diag.String())
	}
}

// blockingWriter blocks every Write until release is closed; it counts
// the lines written.
type blockingWriter struct {
	release chan struct{}
	n       int
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	b.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

func TestLogNeverBlocks(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	l := NewLog(w, nil, nil)
	const extra = 100
	for i := range LogBuffer + extra {
		l.Write(sample(i)) // must return although the writer is stuck
	}
	// The writer took the first findings (one batch of at most logBatch
	// bytes) before it blocked; the rest beyond the buffer were dropped.
	if d, min := l.Dropped(), uint64(extra-1-logBatch/200); d < min {
		t.Errorf("Dropped() = %d, want at least %d", d, min)
	}
	close(w.release)
	l.Close()
	// Every buffered finding plus the drop record was written.
	if got, want := uint64(w.n), uint64(LogBuffer+extra)-l.Dropped()+1; got != want {
		t.Errorf("records written = %d, want %d", got, want)
	}
}

// TestLogBatchesAFlood: findings that wait for the writer go out
// together, in whole lines and at most logBatch bytes a write unless one
// line is longer, while a lone finding is written at once.
func TestLogBatchesAFlood(t *testing.T) {
	w := &recordingWriter{}
	l := NewLog(w, nil, nil)
	l.Write(sample(0))
	waitFor(t, func() bool { return w.count() == 1 }) // a lone finding: written before Close
	const n = 2000
	for i := range n {
		l.WriteWait(sample(i))
	}
	l.Close()
	writes, lines := w.stats()
	if lines != n+1 {
		t.Fatalf("%d lines written, want %d", lines, n+1)
	}
	if writes > n/2 {
		t.Errorf("%d writes for %d findings: the flood was not batched", writes, n+1)
	}
	for i, p := range w.writes {
		if len(p) == 0 || p[len(p)-1] != '\n' {
			t.Fatalf("write %d does not end a line: %q", i, p)
		}
		// A batch is flushed once it reaches logBatch: what came before
		// its last line is shorter.
		if last := bytes.LastIndexByte(p[:len(p)-1], '\n') + 1; last >= logBatch {
			t.Errorf("write %d has %d bytes before its last line, want under logBatch (%d)", i, last, logBatch)
		}
	}
}

// recordingWriter keeps every Write.
type recordingWriter struct {
	mu     sync.Mutex
	writes [][]byte
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

func (r *recordingWriter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

func (r *recordingWriter) stats() (writes, lines int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.writes {
		lines += bytes.Count(p, []byte{'\n'})
	}
	return len(r.writes), lines
}

// waitFor polls cond for up to 10 s (the bound only stops a hung test).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNilLog(t *testing.T) {
	var l *Log
	l.Write(sample(0))
	if l.Dropped() != 0 || l.Failed() || l.Close() != nil {
		t.Error("nil *Log is not a no-op")
	}
}

func TestLogConcurrentWriters(t *testing.T) {
	var out syncBuffer
	l := NewLog(&out, nil, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				l.Write(sample(g*100 + i))
			}
		}()
	}
	wg.Wait()
	l.Close()
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	n := 0
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not JSON: %q", n+1, sc.Text())
		}
		n++
	}
	if uint64(n)+l.Dropped() != 800 && uint64(n)+l.Dropped() != 801 {
		t.Errorf("lines %d + dropped %d, want 800", n, l.Dropped())
	}
}

func TestOpenLogBestEffort(t *testing.T) {
	var diag syncBuffer
	l := OpenLogBestEffort(filepath.Join(t.TempDir(), "no", "dir", "v.log"), &diag)
	l.Write(sample(0))
	l.Close()
	if !l.Failed() || strings.Count(diag.String(), "\n") != 1 {
		t.Errorf("Failed() = %v, diag %q; want true and one line", l.Failed(), diag.String())
	}
	path := filepath.Join(t.TempDir(), "v.log")
	l = OpenLogBestEffort(path, &diag)
	l.Write(sample(0))
	l.Close()
	if data, _ := os.ReadFile(path); !bytes.Contains(data, []byte("BASE-2")) {
		t.Errorf("best-effort log on a good path wrote %q", data)
	}
}

func TestLogWriteWaitNeverDrops(t *testing.T) {
	var out syncBuffer
	l := NewLog(&out, nil, nil)
	const n = 3 * LogBuffer
	for i := range n {
		l.WriteWait(sample(i))
	}
	l.Close()
	if got := strings.Count(out.String(), "\n"); got != n || l.Dropped() != 0 {
		t.Errorf("wrote %d records, dropped %d; want %d and 0", got, l.Dropped(), n)
	}
}

// TestOpenLogRefusesWhatWouldBlockOrLeak: a FIFO at the log path is refused
// without blocking, a planted link is never followed, and an existing log
// others can read is made 0600 with a notice (issue 8 items 3 and 4).
func TestOpenLogRefusesWhatWouldBlockOrLeak(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var diag syncBuffer
	if l, err := OpenLog(fifo, &diag); err == nil {
		l.Close()
		t.Errorf("OpenLog(FIFO) succeeded, want a refusal")
	}
	rc := filepath.Join(dir, "rc")
	os.WriteFile(rc, []byte("# rc\n"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(rc, link)
	if l, err := OpenLog(link, &diag); err == nil {
		l.Write(sample(0))
		l.Close()
		t.Errorf("OpenLog(symlink) succeeded, want a refusal")
	}
	if data, _ := os.ReadFile(rc); string(data) != "# rc\n" {
		t.Errorf("link target = %q, want it untouched", data)
	}
	open := filepath.Join(dir, "open.jsonl")
	os.WriteFile(open, nil, 0o644)
	os.Chmod(open, 0o644)
	l, err := OpenLog(open, &diag)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o600 {
		t.Errorf("existing 0644 log left at %v, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(diag.String(), "changed it to 0600") {
		t.Errorf("diag = %q, want a notice of the mode change", diag.String())
	}
}

// TestLogCloseWithinAbandonsAStuckWriter: a log whose writer blocks (stderr
// nobody reads) is abandoned at the bound, and says how much it lost.
func TestLogCloseWithinAbandonsAStuckWriter(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{})}
	defer close(bw.release)
	var diag syncBuffer
	l := NewLog(bw, nil, &diag)
	for i := range 10 {
		l.Write(sample(i))
	}
	done := make(chan struct{})
	go func() { l.CloseWithin(50 * time.Millisecond); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("CloseWithin did not return while the writer was stuck")
	}
	if !strings.Contains(diag.String(), "findings are missing") {
		t.Errorf("diag = %q, want the loss reported", diag.String())
	}
}
