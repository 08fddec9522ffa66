package report

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"io"
	"sort"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Baseline lists known findings (--baseline) that do not fail a run.
// Entries match by Fingerprint, the same stable identity SARIF's
// partialFingerprints carry. An entry that no longer occurs is stale and
// fails the run, so a baseline only ever shrinks.
//
// A baseline read from a file is held compactly, bounded by its number of
// entries at about 40 bytes each whatever their examples (issue 28 item 9:
// a 1M-entry baseline took 4.67 GB): Entries is filled only for a small
// one (at most baselineKeepWhole entries), as before.
type Baseline struct {
	Version int             `json:"version"`
	Entries []BaselineEntry `json:"entries"`

	// The compact form, built by ReadBaseline or on first use: each
	// entry's fingerprint (hex decoded when it is 32 hex digits, else in
	// other) and check, in file order; examples of the first
	// baselineKeepWhole entries.
	built    bool
	n        int
	index    map[[16]byte]int32
	other    map[string]int32
	fps      [][16]byte // by entry; zero for those in other
	otherFP  map[int32]string
	checks   []uint32 // by entry, into checkIDs
	checkIDs []string
	checkIdx map[string]uint32
	examples []string // of the first baselineKeepWhole entries
	counts   []int    // of the first baselineKeepWhole entries
}

// baselineKeepWhole is how many entries a read baseline keeps whole
// (with their examples); past it, an entry is its fingerprint and check.
const baselineKeepWhole = 4096

// MaxStaleListed is how many stale entries a run lists; the others are
// counted (End.StaleCount) and summarised in one line.
const MaxStaleListed = 20

// A BaselineEntry is one accepted finding: its check, fingerprint, a
// human-readable example and how many times it occurred when written.
type BaselineEntry struct {
	Check       string `json:"check"`
	Fingerprint string `json:"fingerprint"`
	Example     string `json:"example"`
	Count       int    `json:"count"`
}

// ReadBaseline parses a baseline file, one entry at a time.
func ReadBaseline(r io.Reader) (*Baseline, error) {
	br := bufio.NewReader(r)
	tap.SkipBOM(br) // RFC 8259 lets a parser ignore it; editors write it
	dec := json.NewDecoder(br)
	dec.DisallowUnknownFields()
	bad := func(err error) (*Baseline, error) { return nil, fmt.Errorf("not an ahp-tap baseline: %v", err) }
	if t, err := dec.Token(); err != nil {
		return bad(err)
	} else if t != json.Delim('{') {
		return bad(fmt.Errorf("not a JSON object"))
	}
	b := &Baseline{}
	var whole []BaselineEntry
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		switch t {
		case "version":
			if err := dec.Decode(&b.Version); err != nil {
				return bad(err)
			}
		case "entries":
			if t, err := dec.Token(); err != nil {
				return bad(err)
			} else if t == nil {
				continue // "entries": null
			} else if t != json.Delim('[') {
				return bad(fmt.Errorf("entries is not an array"))
			}
			for dec.More() {
				var e BaselineEntry
				if err := dec.Decode(&e); err != nil {
					return bad(err)
				}
				if e.Fingerprint == "" || e.Check == "" {
					return nil, fmt.Errorf("baseline entry %d has no check or fingerprint", b.n+1)
				}
				if b.n < baselineKeepWhole {
					whole = append(whole, e)
				}
				b.add(e)
			}
			if _, err := dec.Token(); err != nil {
				return bad(err)
			}
		default:
			return bad(fmt.Errorf("json: unknown field %q", t))
		}
	}
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	if b.Version != 1 {
		return nil, fmt.Errorf("baseline version %d is not 1", b.Version)
	}
	if b.n <= baselineKeepWhole {
		b.Entries = whole
	}
	b.built = true
	return b, nil
}

// add appends an entry to the compact form.
func (b *Baseline) add(e BaselineEntry) {
	if b.index == nil {
		b.index, b.other, b.otherFP, b.checkIdx = map[[16]byte]int32{}, map[string]int32{}, map[int32]string{}, map[string]uint32{}
	}
	i := int32(b.n)
	k, isHex := hexKey(e.Fingerprint)
	if isHex {
		if _, dup := b.index[k]; !dup {
			b.index[k] = i
		}
	} else {
		if _, dup := b.other[e.Fingerprint]; !dup {
			b.other[e.Fingerprint] = i
		}
		b.otherFP[i] = e.Fingerprint
	}
	b.fps = append(b.fps, k)
	c, ok := b.checkIdx[e.Check]
	if !ok {
		c = uint32(len(b.checkIDs))
		b.checkIDs = append(b.checkIDs, e.Check)
		b.checkIdx[e.Check] = c
	}
	b.checks = append(b.checks, c)
	if b.n < baselineKeepWhole {
		b.examples = append(b.examples, e.Example)
		b.counts = append(b.counts, e.Count)
	}
	b.n++
}

// hexKey decodes a fingerprint of 32 lower-case hex digits (ahp-tap's).
func hexKey(fp string) (k [16]byte, ok bool) {
	if len(fp) != 32 || strings.ToLower(fp) != fp {
		return k, false
	}
	_, err := hex.Decode(k[:], []byte(fp))
	return k, err == nil
}

// build makes the compact form of a baseline made in memory (Entries).
func (b *Baseline) build() {
	if b.built {
		return
	}
	b.built = true
	for _, e := range b.Entries {
		b.add(e)
	}
}

// lookup returns the number of the entry with fingerprint fp.
func (b *Baseline) lookup(fp string) (int32, bool) {
	if k, ok := hexKey(fp); ok {
		i, ok := b.index[k]
		return i, ok
	}
	i, ok := b.other[fp]
	return i, ok
}

// entry returns entry i as far as it is kept (no example past
// baselineKeepWhole).
func (b *Baseline) entry(i int32) BaselineEntry {
	e := BaselineEntry{Check: b.checkIDs[b.checks[i]]}
	if fp, ok := b.otherFP[i]; ok {
		e.Fingerprint = fp
	} else {
		e.Fingerprint = hex.EncodeToString(b.fps[i][:])
	}
	if int(i) < len(b.examples) {
		e.Example, e.Count = b.examples[i], b.counts[i]
	}
	return e
}

// Len is the number of entries.
func (b *Baseline) Len() int {
	if b == nil {
		return 0
	}
	b.build()
	return b.n
}

// Accepts reports whether a finding with fingerprint fp is baselined. A
// nil baseline accepts nothing.
func (b *Baseline) Accepts(fp string) bool {
	if b == nil {
		return false
	}
	b.build()
	_, ok := b.lookup(fp)
	return ok
}

// Stale returns the first MaxStaleListed entries whose fingerprint is
// not in seen, in file order, and how many there are in all.
func (b *Baseline) Stale(seen map[string]int) ([]BaselineEntry, int) {
	if b == nil {
		return nil, 0
	}
	b.build()
	var out []BaselineEntry
	n := 0
	for i := range b.n {
		e := b.entry(int32(i))
		if seen[e.Fingerprint] == 0 {
			if len(out) < MaxStaleListed {
				out = append(out, e)
			}
			n++
		}
	}
	return out, n
}

// Write writes the baseline as indented JSON, entries sorted by check then
// fingerprint, one field per line: a baseline diff reads as the findings
// that came or went.
func (b *Baseline) Write(w io.Writer) error {
	out := Baseline{Version: 1, Entries: append([]BaselineEntry{}, b.Entries...)}
	sort.SliceStable(out.Entries, func(i, j int) bool {
		x, y := out.Entries[i], out.Entries[j]
		if x.Check != y.Check {
			return checkLess(x.Check, y.Check)
		}
		return x.Fingerprint < y.Fingerprint
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// StaleText renders a stale entry for people.
func StaleText(e BaselineEntry) string {
	if e.Example == "" {
		return fmt.Sprintf("stale baseline entry %s %s (no longer occurs; remove it from the baseline)", e.Check, e.Fingerprint)
	}
	return fmt.Sprintf("stale baseline entry %s %s (no longer occurs; remove it from the baseline): %s", e.Check, e.Fingerprint, e.Example)
}

// StaleLines renders the stale entries of a run for a report: one line
// per entry listed, and one line for those not listed (End.StaleCount).
func StaleLines(e *End) []string {
	var out []string
	for _, st := range e.Stale {
		out = append(out, printable.Line(StaleText(st)))
	}
	if more := e.StaleCount - len(e.Stale); more > 0 {
		out = append(out, fmt.Sprintf("%d more stale baseline entries (no longer occur; rewrite the baseline with --write-baseline, or remove them)", more))
	}
	return out
}

// StaleSummary says in one line that n entries are stale, naming the
// first (for a terminal: one line however many there are).
func StaleSummary(e *End) string {
	if len(e.Stale) == 0 {
		return ""
	}
	if e.StaleCount <= 1 {
		return StaleText(e.Stale[0])
	}
	return fmt.Sprintf("%d stale baseline entries (no longer occur; rewrite the baseline with --write-baseline, or remove them); the first: %s", e.StaleCount, StaleText(e.Stale[0]))
}
