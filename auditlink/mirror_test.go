package auditlink

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A mirror whose reader does not read never blocks the forwarding path:
// once the pipe is full it drops and counts, and the first record after
// the reader catches up carries the loss (flag and lines lost), so the
// audit process resynchronises that stream. Records are never cut: every
// one read back is whole.
func TestMirrorDropsWhenFullAndSaysSo(t *testing.T) {
	m, r, err := NewPipeMirror(0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	line := append(bytes.Repeat([]byte("x"), 4095), '\n') // one line per chunk
	t0 := time.Unix(1700000000, 0)
	sent := 0
	for m.Dropped() == 0 {
		if sent > 1<<14 {
			t.Fatalf("%d chunks (%d MiB) written into a pipe nobody reads, none dropped", sent, sent*len(line)>>20)
		}
		m.Chunk(tap.FromBackend, t0, line) // would hang here if it blocked
		sent++
	}
	for range 9 {
		m.Chunk(tap.FromBackend, t0, line) // dropped too: the pipe is still full
	}
	lost := m.Dropped()
	if lost != 10 {
		t.Fatalf("dropped %d, want 10", lost)
	}
	// The reader catches up; the next record carries the loss.
	done := readRecords(r, 0, nil)
	// Room comes back as the reader drains: retry until written.
	for {
		before := m.Dropped()
		m.Chunk(tap.FromBackend, t0, []byte("after\n"))
		if m.Dropped() == before {
			break
		}
		time.Sleep(time.Millisecond)
	}
	m.Chunk(tap.FromHarness, t0, []byte("h\n")) // no loss in this direction
	// A bound long enough that End never cuts the backlog on a loaded
	// machine (it returns as soon as everything is handed over); the cut
	// has its own test (TestMirrorEndCutsWhatCannotBeHandedOver).
	m.End(stdio.Result{ExitCode: 3}, time.Minute)
	read := <-done
	if !errors.Is(read.err, io.EOF) {
		t.Errorf("reading: %v", read.err)
	}
	recs := read.recs
	var loss *Record
	for i := range recs {
		rec := &recs[i]
		if rec.Kind == RecordChunk && rec.Dir == tap.FromHarness && rec.Loss {
			t.Errorf("a harness record carries the backend's loss")
		}
		if rec.Kind == RecordChunk && rec.Dir == tap.FromBackend && rec.Loss && loss == nil {
			loss = rec
		}
		if rec.Kind == RecordChunk && rec.Dir == tap.FromBackend && !rec.Loss && len(rec.Payload) != len(line) {
			t.Errorf("record %d: %d bytes, want a whole chunk", rec.Seq, len(rec.Payload))
		}
		if i > 0 && rec.Seq != recs[i-1].Seq+1 {
			t.Errorf("record numbers jump from %d to %d: a record was cut or numbered when dropped", recs[i-1].Seq, rec.Seq)
		}
	}
	if loss == nil || string(loss.Payload) != "after\n" || loss.Lost < 10 {
		t.Fatalf("the first backend record after the drops = %+v, want \"after\" carrying the loss of >= 10 lines", loss)
	}
	if last := recs[len(recs)-1]; last.Kind != RecordEnd {
		t.Errorf("last record kind %d, want the end record", last.Kind)
	}
}

// A socket mirror (the shared audit process's link) writes the same
// records as the pipe's, and End shuts the socket's write side down: the
// reader sees the end of the link although the writer keeps a duplicate
// of the socket open to read the reader's answer, and that answer still
// arrives.
func TestSocketMirrorEndsTheLinkAndHearsTheAnswer(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0) // no SOCK_CLOEXEC: not on every Unix; the test starts no process
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()
	dup, err := syscall.Dup(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	answers := os.NewFile(uintptr(dup), "answers") // the writer's read side
	defer answers.Close()
	m, err := NewSocketMirror(fds[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	m.Chunk(tap.FromHarness, t0, []byte("{\"a\":1}\n"))
	m.Note(tap.Note{Kind: tap.NoteEOF, Dir: tap.FromHarness, Time: t0})
	done := readRecords(peer, 0, func() { peer.Write([]byte("A")) }) // the answer, after the end
	m.End(stdio.Result{ExitCode: 0}, time.Second)
	read := <-done // without the shutdown, EOF never comes: the test hangs here
	if !errors.Is(read.err, io.EOF) {
		t.Errorf("reading: %v", read.err)
	}
	recs := read.recs
	if len(recs) != 3 || recs[0].Kind != RecordChunk || string(recs[0].Payload) != "{\"a\":1}\n" || recs[1].Kind != RecordNote || recs[2].Kind != RecordEnd {
		t.Fatalf("records %+v, want the chunk, the note and the end record", recs)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(answers, b); err != nil || b[0] != 'A' {
		t.Errorf("the answer after the end: %q, %v", b, err)
	}
}

// A clean end whose backlog the reader cannot take in time (issue 28 item
// 3): End cuts the chunks still waiting, so that the notes and the end
// record are handed over, and the lines cut are carried by a loss record:
// the audit counts them as not audited (TAP-1) and takes the end as
// clean, never as a kill. Before, the end record stayed in the backlog and
// the audit recorded the link as killed.
func TestMirrorEndCutsWhatCannotBeHandedOver(t *testing.T) {
	m, r, err := NewPipeMirror(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	line := append(bytes.Repeat([]byte("y"), 4095), '\n')
	t0 := time.Unix(1700000000, 0)
	chunks := 0
	for m.Dropped() == 0 && chunks < 2000 { // fill the pipe and part of the backlog
		m.Chunk(tap.FromHarness, t0, line)
		chunks++
	}
	m.Note(tap.Note{Kind: tap.NoteEOF, Time: t0, Dir: tap.FromHarness})
	// The reader is away until past half of End's wait (when it cuts),
	// then reads what the pipe holds and what is handed over after. The
	// margins both ways (End's cut late, the reader back late) are half a
	// second, so that a loaded host does not turn the order around.
	done := readRecords(r, 1500*time.Millisecond, nil)
	left := m.End(stdio.Result{}, 2*time.Second)
	recs := (<-done).recs
	if left != 0 {
		t.Fatalf("End left %d bytes unsent: the end record did not reach the audit", left)
	}
	var got, lost uint64
	var eof, end bool
	for _, rec := range recs {
		lost += rec.Lost // a note of the direction may carry a loss too
		switch rec.Kind {
		case RecordChunk:
			got += uint64(bytes.Count(rec.Payload, []byte{'\n'}))
		case RecordNote:
			eof = true
		case RecordEnd:
			end = true
		}
	}
	if !eof || !end || recs[len(recs)-1].Kind != RecordEnd {
		t.Fatalf("notes %v, end %v (last record kind %d): want the EOF note and the end record last", eof, end, recs[len(recs)-1].Kind)
	}
	if lost == 0 || got+lost != uint64(chunks) {
		t.Errorf("%d lines handed over + %d counted lost, want %d in all, some lost", got, lost, chunks)
	}
}

// TestMirrorCarriesALossOnTheNextRecordOfEitherDirection: requests whose
// audit copies were dropped (the pipe full) are answered; the answer's
// record is the first written after the drops and must carry them
// (flagLossOther and their lines), or the audit would judge the answer
// before it knew its request was lost.
func TestMirrorCarriesALossOnTheNextRecordOfEitherDirection(t *testing.T) {
	m, r, err := NewPipeMirror(64 << 10) // a small backlog: drops come soon
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	line := append(bytes.Repeat([]byte("r"), 4095), '\n')
	t0 := time.Unix(1700000000, 0)
	for sent := 0; m.Dropped() < 3; sent++ {
		if sent > 1<<14 {
			t.Fatalf("%d harness chunks written into a pipe nobody reads, none dropped", sent)
		}
		m.Chunk(tap.FromHarness, t0, line)
	}
	done := readRecords(r, 0, nil)
	for { // the answer: retried until the drained pipe takes it
		before := m.Dropped()
		m.Chunk(tap.FromBackend, t0, []byte("answer\n"))
		if m.Dropped() == before {
			break
		}
		time.Sleep(time.Millisecond)
	}
	m.Chunk(tap.FromHarness, t0, []byte("next\n"))
	m.End(stdio.Result{}, time.Minute)
	var answer, next *Record
	all := (<-done).recs
	for i := range all {
		switch string(all[i].Payload) {
		case "answer\n":
			answer = &all[i]
		case "next\n":
			next = &all[i]
		}
	}
	if answer == nil || next == nil {
		t.Fatalf("records missing: answer %v, next %v", answer, next)
	}
	if !answer.LossOther || answer.Loss || answer.Lost < 3 {
		t.Errorf("the answer's record: LossOther %v, Loss %v, Lost %d; want the harness's loss of >= 3 lines on it", answer.LossOther, answer.Loss, answer.Lost)
	}
	if next.Loss || next.LossOther || next.Lost != 0 {
		t.Errorf("the next harness record carries a loss again: Loss %v, LossOther %v, Lost %d", next.Loss, next.LossOther, next.Lost)
	}
}

// recordsRead is what readRecords read, and the error that ended it.
type recordsRead struct {
	recs []Record
	err  error
}

// readRecords reads the audit link r on a goroutine of its own, after
// waiting delay (a reader away for a while), until the link ends; it then
// calls then (when not nil) and sends what it read.
func readRecords(r io.Reader, delay time.Duration, then func()) <-chan recordsRead {
	done := make(chan recordsRead, 1)
	go func() {
		time.Sleep(delay)
		var out recordsRead
		rr := NewRecordReader(r)
		for {
			rec, err := rr.Next()
			if err != nil {
				out.err = err
				if then != nil {
					then()
				}
				done <- out
				return
			}
			out.recs = append(out.recs, rec)
		}
	}()
	return done
}
