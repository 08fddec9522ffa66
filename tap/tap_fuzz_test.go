package tap

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// sharedAHP is the upstream reference data, beside the repository. Fuzz
// seeds are read from it at test time, never copied here.
const sharedAHP = "../../shared/ahp"

// fuzzSeeds returns every upstream fixture file's bytes.
func fuzzSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, glob := range []string{"fixtures/draft/*/*.json", "fixtures/draft/*/*.jsonl"} {
		paths, _ := filepath.Glob(filepath.Join(sharedAHP, glob))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				out = append(out, data)
			}
		}
	}
	return out
}

// FuzzFrameDecode: decoding any frame never panics, says exactly whether
// it is valid UTF-8, and stays within its bounds: at most MaxDuplicateKeys duplicates listed, key comparisons
// linear in the values decoded, a frame over the value bound not decoded;
// a bounded decode agrees with an unbounded one below the bound.
func FuzzFrameDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"a":1,"a":2,"b":{"a":1,"a":[1,2,3]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := &Frame{Raw: data}
		fr.Decode()
		if len(fr.Dups) > MaxDuplicateKeys || fr.DupCount < len(fr.Dups) {
			t.Fatalf("Dups %d of %d, bound %d", len(fr.Dups), fr.DupCount, MaxDuplicateKeys)
		}
		if fr.OverBound && (fr.Tree != nil || fr.Msg != nil) {
			t.Fatalf("a frame over the bound was decoded")
		}
		if fr.BadUTF8 == utf8.Valid(data) {
			t.Fatalf("BadUTF8 %v for %q", fr.BadUTF8, data)
		}
		var d Decoder
		v, err := d.Parse(data)
		if d.KeyCompares > indexAt*d.Values {
			t.Fatalf("%d key comparisons for %d values: not linear", d.KeyCompares, d.Values)
		}
		small := Decoder{MaxValues: 16}
		sv, serr := small.Parse(data)
		switch {
		case err != nil:
		case d.Values <= 16 && (serr != nil || !bytes.Equal(sv.Canonical(), v.Canonical())):
			t.Fatalf("bounded decode of %d values: %v, want the unbounded result", d.Values, serr)
		case d.Values > 16 && serr != ErrTooManyValues:
			t.Fatalf("bounded decode of %d values (bound 16): %v, want ErrTooManyValues", d.Values, serr)
		}
	})
}

// FuzzSplitFixtures: cutting any stream at any two points gives lines that
// rejoin to the stream, and a Max cap never keeps more than Max bytes of a
// line while counting every byte.
func FuzzSplitFixtures(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, uint16(len(s)/3), uint16(len(s)/2), uint16(0))
	}
	f.Add([]byte("a\r\n\r\nb\rc\n"), uint16(1), uint16(4), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, c1, c2, maxLine uint16) {
		a, b := min(int(c1), len(data)), min(int(c2), len(data))
		if a > b {
			a, b = b, a
		}
		got := split(0, data[:a], data[a:b], data[b:])
		if !bytes.Equal(rejoin(got), data) {
			t.Fatalf("lines do not rejoin to the input")
		}
		capped := split(int(maxLine), data[:a], data[a:b], data[b:])
		if len(capped) != len(got) {
			t.Fatalf("%d lines with Max %d, %d without", len(capped), maxLine, len(got))
		}
		for i, l := range capped {
			if maxLine > 0 && len(l.line) > int(maxLine) || l.size != got[i].size || l.truncated != (len(l.line) < l.size) {
				t.Fatalf("line %d with Max %d: %d bytes kept of %d (truncated %v); uncapped %d", i, maxLine, len(l.line), l.size, l.truncated, got[i].size)
			}
			if !strings.HasPrefix(got[i].line, l.line) {
				t.Fatalf("line %d with Max %d is not a prefix of the line", i, maxLine)
			}
		}
	})
}
