package nbwriter

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestWriterNeverBlocksOnAStuckPipe writes far more than a pipe holds to a
// pipe nobody reads: every Write returns, Close gives up after its bound.
func TestWriterNeverBlocksOnAStuckPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	nw := New(w, 64<<10)
	line := strings.Repeat("x", 1000) + "\n"
	for i := 0; i < 5000; i++ { // 5 MB: 80 pipe buffers
		nw.Write([]byte(line))
	}
	if nw.Dropped() == 0 {
		t.Errorf("Dropped() = 0 after 5 MB to a pipe nobody reads, want > 0")
	}
	if nw.Close(50 * time.Millisecond) {
		t.Errorf("Close = true with the pipe full, want false (abandoned)")
	}
	r.Close() // unblocks the goroutine (EPIPE) so it ends
}

// TestWriterDeliversInOrderAndReportsDrops checks that what is not dropped
// arrives whole and in order, and that a drop is said once the output moves.
func TestWriterDeliversInOrderAndReportsDrops(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	nw := New(w, 1<<20)
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(nw, "line %d\n", i)
	}
	if !nw.Close(10 * time.Second) {
		t.Fatal("Close = false with a reader, want true")
	}
	w.Close()
	sc := bufio.NewScanner(r)
	i := 0
	for sc.Scan() {
		if want := fmt.Sprintf("line %d", i); sc.Text() != want {
			t.Fatalf("line %d = %q, want %q", i, sc.Text(), want)
		}
		i++
	}
	if i != 1000 {
		t.Errorf("got %d lines, want 1000", i)
	}

	pr, pw := io.Pipe()
	nw = New(pw, 10)
	nw.Write([]byte("0123456789")) // fills the buffer, or blocks the goroutine on the pipe
	nw.Write([]byte("more than ten bytes\n"))
	nw.Write([]byte("again more than ten\n"))
	out := make(chan string, 1)
	go func() { b, _ := io.ReadAll(pr); out <- string(b) }()
	nw.Write([]byte("after\n"))
	nw.Close(10 * time.Second)
	pw.Close()
	got := <-out
	if !strings.Contains(got, "0123456789") || nw.Dropped() == 0 {
		t.Errorf("output = %q (%d dropped), want the first write whole and a later one dropped", got, nw.Dropped())
	}
	if nw.Dropped() > 0 && !strings.Contains(got, "were dropped") {
		t.Errorf("output = %q, want a line saying writes were dropped", got)
	}
}
