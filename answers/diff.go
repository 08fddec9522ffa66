// Package answers compares an answer with a recorded one, structurally:
// what differs, by JSON Pointer. The mock harness (a live backend's
// answers against a recording) and ahp-tap diff (two recordings) both
// use it, so that the two report a change the same way.
package answers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Difference is one place where a live answer differs from the recorded
// one.
type Difference struct {
	// Pointer is the JSON Pointer of the place ("" for the whole message).
	Pointer string
	// Recorded and Got are the values there, as canonical JSON, or
	// "absent".
	Recorded, Got string
}

func (d Difference) String() string {
	ptr := d.Pointer
	if ptr == "" {
		ptr = "(whole message)"
	}
	return fmt.Sprintf("%s: recorded %s, got %s", ptr, d.Recorded, d.Got)
}

// Diff compares a live answer with the recorded one, structurally: object
// members by name (order is not a difference), array elements by
// position, numbers as written. Places the ignore pointers name are not
// compared; nor is the JSON-RPC id, which the harness side sends as
// recorded. A nil frame is "no answer".
func Diff(recorded, got *tap.Frame, ignore []Pointer) []Difference {
	var rv, gv *tap.Value
	if recorded != nil {
		recorded = recorded.Undecoded() // a recording keeps its frames undecoded
		recorded.Decode()
		rv = recorded.Tree
	}
	if got != nil {
		got.Decode()
		gv = got.Tree
	}
	switch {
	case recorded == nil && got == nil:
		return nil
	case recorded == nil:
		return []Difference{{Recorded: "no answer", Got: string(got.Raw)}}
	case got == nil:
		return []Difference{{Recorded: string(recorded.Raw), Got: "no answer"}}
	case rv == nil || gv == nil:
		if string(recorded.Raw) == string(got.Raw) {
			return nil
		}
		return []Difference{{Recorded: string(recorded.Raw), Got: string(got.Raw)}}
	}
	var out []Difference
	diffValue(&out, rv, gv, nil, ignore)
	return out
}

func diffValue(out *[]Difference, r, g *tap.Value, path []string, ignore []Pointer) {
	if len(path) > 0 && Ignored(ignore, path) {
		return
	}
	if len(path) == 1 && path[0] == "id" {
		return
	}
	ptr := func() string {
		var toks []any
		for _, t := range path {
			toks = append(toks, t)
		}
		return tap.Ptr("", toks...)
	}
	switch {
	case r == nil && g == nil:
		return
	case r == nil || g == nil || r.Kind != g.Kind:
		*out = append(*out, Difference{Pointer: ptr(), Recorded: show(r), Got: show(g)})
	case r.Is(tap.Object):
		keys := slices.Compact(slices.Sorted(slices.Values(append(r.Keys(), g.Keys()...))))
		for _, k := range keys {
			diffValue(out, r.Get(k), g.Get(k), append(path[:len(path):len(path)], k), ignore)
		}
	case r.Is(tap.Array):
		for i := range max(len(r.Arr), len(g.Arr)) {
			var re, ge *tap.Value
			if i < len(r.Arr) {
				re = r.Arr[i]
			}
			if i < len(g.Arr) {
				ge = g.Arr[i]
			}
			diffValue(out, re, ge, append(path[:len(path):len(path)], fmt.Sprint(i)), ignore)
		}
	default:
		if string(r.Canonical()) != string(g.Canonical()) {
			*out = append(*out, Difference{Pointer: ptr(), Recorded: show(r), Got: show(g)})
		}
	}
}

// show renders a value for a difference; long values are cut.
func show(v *tap.Value) string {
	if v == nil {
		return "absent"
	}
	s := string(v.Canonical())
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// A Pointer is a JSON Pointer into a message; a "*" token matches any one
// member or element.
type Pointer []string

// ParsePointer parses a JSON Pointer ("" or starting with "/").
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("%q is not a JSON Pointer (it must start with /)", s)
	}
	toks := strings.Split(s[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// Matches reports whether the pointer names the member at path.
func (p Pointer) Matches(path []string) bool {
	if len(p) != len(path) {
		return false
	}
	for i, t := range p {
		if t != "*" && t != path[i] {
			return false
		}
	}
	return true
}

// Ignored reports whether any of ps names path.
func Ignored(ps []Pointer, path []string) bool {
	for _, p := range ps {
		if p.Matches(path) {
			return true
		}
	}
	return false
}
