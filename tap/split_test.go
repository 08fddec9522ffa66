package tap

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// splitLine is one emitted line, copied.
type splitLine struct {
	line      string
	fr        Framing
	size      int
	truncated bool
}

func split(max int, chunks ...[]byte) []splitLine {
	var out []splitLine
	s := Splitter{Max: max, Emit: func(line []byte, fr Framing, size int, truncated bool) {
		out = append(out, splitLine{string(line), fr, size, truncated})
	}}
	for _, c := range chunks {
		s.Write(c)
	}
	s.Close()
	return out
}

// rejoin rebuilds the stream from untruncated lines: it must equal the input.
func rejoin(lines []splitLine) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l.line)
		switch {
		case l.fr.Unterminated:
		case l.fr.CRLF:
			b.WriteString("\r\n")
		default:
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

func TestSplitterFraming(t *testing.T) {
	got := split(0, []byte("a\r\nb\n\nc\r"))
	want := []splitLine{
		{"a", Framing{Line: true, CRLF: true}, 1, false},
		{"b", Framing{Line: true}, 1, false},
		{"", Framing{Line: true}, 0, false},
		{"c\r", Framing{Line: true, Unterminated: true}, 2, false},
	}
	if len(got) != len(want) {
		t.Fatalf("split = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(split(0, []byte("x\n"))) != 1 {
		t.Error("a terminated final line must not emit an extra empty line at Close")
	}
	if len(split(0)) != 0 {
		t.Error("an empty stream emits no line")
	}
}

func TestSplitterOneByteWrites(t *testing.T) {
	input := []byte("{\"a\":1}\r\n{\"b\":\"\xff\u2028\"}\n\x00garbage\nlast")
	whole := split(0, input)
	var got []splitLine
	s := Splitter{Emit: func(line []byte, fr Framing, size int, truncated bool) {
		got = append(got, splitLine{string(line), fr, size, truncated})
	}}
	r := iotest.OneByteReader(bytes.NewReader(input))
	buf := make([]byte, 64)
	for {
		n, err := r.Read(buf)
		s.Write(buf[:n])
		if err == io.EOF {
			break
		}
	}
	s.Close()
	if len(got) != len(whole) {
		t.Fatalf("one-byte writes gave %d lines, whole write %d", len(got), len(whole))
	}
	for i := range whole {
		if got[i] != whole[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], whole[i])
		}
	}
	if !bytes.Equal(rejoin(got), input) {
		t.Errorf("lines do not rejoin to the input")
	}
}

func TestSplitterHugeLine(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	line := bytes.Repeat([]byte("y"), 20<<20)
	in := append(append([]byte{}, line...), "\nnext\n"...)
	got := split(0, in[:7<<20], in[7<<20:])
	if len(got) != 2 || len(got[0].line) != len(line) || got[0].truncated || got[1].line != "next" {
		t.Fatalf("20 MB line: got %d lines (first %d bytes)", len(got), len(got[0].line))
	}
	capped := split(1<<20, in)
	if len(capped) != 2 || len(capped[0].line) != 1<<20 || !capped[0].truncated || capped[0].size != len(line) {
		t.Errorf("capped: line of %d bytes, truncated %v, size %d; want 1 MiB prefix of a %d-byte line",
			len(capped[0].line), capped[0].truncated, capped[0].size, len(line))
	}
	if capped[0].fr.CRLF {
		t.Error("a truncated line cannot know its ending")
	}
}

func TestSplitterLost(t *testing.T) {
	var got []string
	s := Splitter{Emit: func(line []byte, fr Framing, size int, truncated bool) { got = append(got, string(line)) }}
	s.Write([]byte("one\ntw"))
	s.Lost() // "o\nthree" never reached the splitter
	s.Write([]byte("rest of a line\nfour\n"))
	s.Close()
	if strings.Join(got, ",") != "one,four" || s.Skipped() != 1 {
		t.Errorf("got %q, skipped %d; want one,four and 1", got, s.Skipped())
	}
}

func FuzzSplitter(f *testing.F) {
	f.Add([]byte("a\r\nb\n"), 3)
	f.Add([]byte("\n\n\r\r\n"), 1)
	f.Add([]byte("no newline"), 0)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		if cut < 0 || cut > len(data) {
			cut = len(data) / 2
		}
		got := split(0, data[:cut], data[cut:])
		if !bytes.Equal(rejoin(got), data) {
			t.Fatalf("lines %+v do not rejoin to %q", got, data)
		}
	})
}

// A CRLF line that fits Max once its "\r" is set aside is not truncated
// (FuzzSplitFixtures found it: testdata/fuzz/FuzzSplitFixtures).
func TestSplitterCRLFAtTheCap(t *testing.T) {
	got := split(4, []byte("abcd\r\nabcde\r\n"))
	want := []splitLine{
		{"abcd", Framing{Line: true, CRLF: true}, 4, false},
		{"abcd", Framing{Line: true, CRLF: true}, 5, true},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("split = %+v, want %+v", got, want)
	}
}
