// Package printable makes text from the wire or from files safe to print
// for people: on a terminal, in a CI log, in a report read in a pager.
//
// A JSON key, an effect type, a method or a file name can hold anything:
// ESC sequences that retitle the terminal, clear the screen or write the
// clipboard (OSC 52), a newline followed by a GitHub Actions workflow
// command ("::error …", "::add-mask::…"), bidirectional overrides that make
// a line read differently from what it says. Every human-facing line
// ahp-tap prints goes through this package (issue 28 item 2); structured
// reports (JSON, SARIF, JUnit) are escaped by their encoders instead.
package printable

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every character that could act on a terminal, a
// log viewer or the reading order replaced by a visible escape:
//
//   - C0 controls and DEL: \t, \n, \r, or \xNN (ESC is \x1b);
//   - C1 controls (U+0080–U+009F) and the bidirectional and line-breaking
//     format characters (U+061C, U+200E, U+200F, U+2028–U+202E,
//     U+2066–U+2069): \uNNNN;
//   - bytes that are not UTF-8: \xNN.
//
// Everything else, backslashes included, is left alone, so the output is
// exactly the input when there is nothing to escape, String is idempotent
// (String(String(s)) == String(s)), and the output is at most 4 bytes per
// input byte. The escapes are for reading, not for decoding: a literal
// "\x1b" in the input prints the same as an escaped ESC.
func String(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			writeByte(&b, s[i])
			i++
			continue
		}
		if unsafeRune(r) {
			writeRune(&b, r)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Line is String for a whole line (without its "\n"), which in addition
// can never be read as a GitHub Actions workflow command: a line whose
// first non-blank characters (white space, zero-width characters and
// BOMs skipped) are "::" gets its first colon written \x3a,
// and a "##[" anywhere (the runner's older command syntax) becomes
// "#\x23[". Line is idempotent too.
func Line(s string) string {
	s = String(s)
	if strings.Contains(s, "##[") {
		s = strings.ReplaceAll(s, "##[", `#\x23[`)
	}
	t := strings.TrimLeftFunc(s, blank)
	if strings.HasPrefix(t, "::") {
		k := len(s) - len(t)
		s = s[:k] + `\x3a` + s[k+1:]
	}
	return s
}

// blank reports whether a reader of workflow commands might skip r before
// a command: white space (the runner trims it) and invisible format
// characters (BOM, zero-width space and joiners: some .NET versions and
// log viewers treat them alike).
func blank(r rune) bool {
	return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r)
}

// Lines applies Line to each "\n"-separated line of s, keeping the
// newlines: for text whose line breaks are ahp-tap's own (a format, a
// summary) and whose data parts were made safe with String.
func Lines(s string) string {
	if !strings.Contains(s, "::") && !strings.Contains(s, "##[") && firstUnsafeExceptNewline(s) < 0 {
		return s
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = Line(p)
	}
	return strings.Join(parts, "\n")
}

// Sprintf formats like fmt.Sprintf with every operand made safe by String
// (after it is formatted with its verb, so %q, %d and widths work as
// usual); the format's own newlines are kept and each line gets Line's
// workflow-command guard.
func Sprintf(format string, args ...any) string {
	return Lines(fmt.Sprintf(format, safeArgs(args)...))
}

// Fprintf is Sprintf written to w: the one call for a diagnostic line
// that quotes a name, a method, an error or anything else from outside.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return io.WriteString(w, Sprintf(format, args...))
}

func safeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch a.(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, float32, float64, bool:
			out[i] = a // nothing to escape; and %*d takes its width as is
		default:
			out[i] = safeArg{a}
		}
	}
	return out
}

// safeArg formats its value with the verb and flags it was given, then
// passes the result through String.
type safeArg struct{ v any }

func (a safeArg) Format(st fmt.State, verb rune) {
	io.WriteString(st, String(fmt.Sprintf(fmt.FormatString(st, verb), a.v)))
}

// firstUnsafe is the index of the first byte String would change, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < 0x80 {
			return i
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

func firstUnsafeExceptNewline(s string) int {
	for {
		i := firstUnsafe(s)
		if i < 0 || s[i] != '\n' {
			return i
		}
		s = s[i+1:]
	}
}

// unsafeRune reports whether String escapes the (valid) rune r.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f: // C1 controls (CSI is U+009B)
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // ALM, LRM, RLM
		return true
	case r >= 0x2028 && r <= 0x202e: // line and paragraph separators; LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	return false
}

const hexDigits = "0123456789abcdef"

func writeByte(b *strings.Builder, c byte) {
	switch c {
	case '\t':
		b.WriteString(`\t`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	default:
		b.WriteString(`\x`)
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
}

func writeRune(b *strings.Builder, r rune) {
	if r < 0x80 {
		writeByte(b, byte(r))
		return
	}
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xf])
	}
}
