package printable

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain /a/b~1c", "plain /a/b~1c"},
		{"café ▸ 日本", "café ▸ 日本"},
		{`back\slash`, `back\slash`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"\x1b[2J", `\x1b[2J`},
		{"\x1b]52;c;cGF5bG9hZA==\x07", `\x1b]52;c;cGF5bG9hZA==\x07`},
		{"a\n::error::x", `a\n::error::x`},
		{"tab\tcr\r", `tab\tcr\r`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1 \u009b2J \u0085", `c1 \u009b2J \u0085`},
		{"bidi \u202eevil\u202c \u2066x\u2069 \u200f", `bidi \u202eevil\u202c \u2066x\u2069 \u200f`},
		{"ls \u2028 ps \u2029", `ls \u2028 ps \u2029`},
		{"bad \xff\xfe utf8 \x9b", `bad \xff\xfe utf8 \x9b`},
		{"cut \xe2\x80", `cut \xe2\x80`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ahp-tap: fine", "ahp-tap: fine"},
		{"a::b", "a::b"},
		{"::error::x", `\x3a:error::x`},
		{"  \u00a0::add-mask::s", "  \u00a0\\x3a:add-mask::s"},
		{"\t::warning::x", `\t::warning::x`}, // the tab is escaped: no longer blank
		{"\ufeff\u200b::error::x", "\ufeff\u200b\\x3a:error::x"},
		{"see ##[add-mask]secret", `see #\x23[add-mask]secret`},
		{"###[x]", `##\x23[x]`},
		{"x\n::error::y", `x\n::error::y`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSprintf(t *testing.T) {
	err := errors.New("bad key \"\x1b[2J\"\n::error::owned")
	got := Sprintf("ahp-tap: %s: %v (%q, %d, %-6s|)\n", "m\x1b]0;t\x07", err, "q\x1b", 42, "ab")
	want := `ahp-tap: m\x1b]0;t\x07: bad key "\x1b[2J"\n::error::owned ("q\x1b", 42, ab    |)` + "\n"
	if got != want {
		t.Errorf("Sprintf = %q\nwant      %q", got, want)
	}
	// An operand cannot start a line, but the format can only start one
	// with its own text; a data line starting with :: is guarded.
	if got := Sprintf("%s\n%s", "::error::a", "::error::b"); got != `\x3a:error::a`+"\n"+`\x3a:error::b` {
		t.Errorf("Sprintf lines = %q", got)
	}
	if got := Sprintf("%*d|%-*s|%v", 4, 7, 3, "a\x1b", nil); got != `   7|a\x1b |<nil>` {
		t.Errorf("Sprintf with * widths = %q", got)
	}
	var b strings.Builder
	if _, err := Fprintf(&b, "%s=%d\n", "\u009b", 1); err != nil || b.String() != `\u009b=1`+"\n" {
		t.Errorf("Fprintf = %q, %v", b.String(), err)
	}
}

func TestLines(t *testing.T) {
	in := "summary: 1 error\n::error::x\n  fine\n"
	if got, want := Lines(in), "summary: 1 error\n\\x3a:error::x\n  fine\n"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
	if got := Lines("a\nb\n"); got != "a\nb\n" {
		t.Errorf("Lines changed safe text: %q", got)
	}
}

// checkSafe asserts the promises of Line on any input.
func checkSafe(t *testing.T, in string) {
	out := Line(in)
	for i := 0; i < len(out); i++ {
		if c := out[i]; c < 0x20 || c == 0x7f {
			t.Fatalf("Line(%q) = %q holds byte %#x", in, out, c)
		}
	}
	if !utf8.ValidString(out) {
		t.Fatalf("Line(%q) = %q is not UTF-8", in, out)
	}
	for _, r := range out {
		if unsafeRune(r) {
			t.Fatalf("Line(%q) = %q holds %U", in, out, r)
		}
	}
	if strings.HasPrefix(strings.TrimLeftFunc(out, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }), "::") || strings.Contains(out, "##[") {
		t.Fatalf("Line(%q) = %q can start a workflow command", in, out)
	}
	if Line(out) != out || String(out) != out {
		t.Fatalf("Line is not idempotent on %q: %q then %q", in, out, Line(out))
	}
	if len(out) > 4*len(in)+3 {
		t.Fatalf("Line(%q) is %d bytes for %d", in, len(out), len(in))
	}
	if s := String(in); len(s) > 4*len(in) || String(s) != s {
		t.Fatalf("String(%q) = %q: too long or not idempotent", in, s)
	}
	if firstUnsafe(in) < 0 && String(in) != in {
		t.Fatalf("String changed safe %q", in)
	}
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "::error::x", "\x1b]52;c;eA==\x07", " \u00a0::x", "##[add-mask]", "\xff\u202e\u0085", "a\nb\r\n::c"} {
		f.Add(s)
	}
	f.Fuzz(checkSafe)
}

// TestEveryByte runs checkSafe on every single byte and every rune
// boundary case, so the promises hold without a fuzzing run.
func TestEveryByte(t *testing.T) {
	for c := 0; c < 256; c++ {
		checkSafe(t, string([]byte{byte(c)}))
		checkSafe(t, "::"+string([]byte{byte(c)}))
		checkSafe(t, string([]byte{byte(c)})+"::x")
	}
	for _, r := range []rune{0xfeff, 0x200b, 0x200d, 0x2060, 0x180e, 0x7f, 0x80, 0x9f, 0xa0, 0x061c, 0x200e, 0x2027, 0x2028, 0x202e, 0x202f, 0x2065, 0x2066, 0x2069, 0x206a, 0xfeff, utf8.MaxRune} {
		checkSafe(t, string(r)+"::"+string(r))
	}
}

// A typical finding line: nothing to escape (the common case, no
// allocation) and one with a payload in its pointer.
func BenchmarkLine(b *testing.B) {
	clean := `session.capture: #4 sent by backend: error BASE-2 at /result/protocolVersion: the successful result carries protocolVersion "2025-06", expected exactly "draft" [BASE-2/version]`
	dirty := strings.Replace(clean, "/result/protocolVersion", "/result/\x1b]0;pwned\x07\n::error::x", 1)
	b.Run("clean", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(clean)))
		for b.Loop() {
			Line(clean)
		}
	})
	b.Run("payload", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(dirty)))
		for b.Loop() {
			Line(dirty)
		}
	})
}
