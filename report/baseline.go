package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Baseline lists known findings (--baseline) that do not fail a run.
// Entries match by Fingerprint, the same stable identity SARIF's
// partialFingerprints carry. An entry that no longer occurs is stale and
// fails the run, so a baseline only ever shrinks.
type Baseline struct {
	Version int             `json:"version"`
	Entries []BaselineEntry `json:"entries"`

	index map[string]bool // fingerprints, built on first use
}

// A BaselineEntry is one accepted finding: its check, fingerprint, a
// human-readable example and how many times it occurred when written.
type BaselineEntry struct {
	Check       string `json:"check"`
	Fingerprint string `json:"fingerprint"`
	Example     string `json:"example"`
	Count       int    `json:"count"`
}

// ReadBaseline parses a baseline file.
func ReadBaseline(r io.Reader) (*Baseline, error) {
	br := bufio.NewReader(r)
	tap.SkipBOM(br) // RFC 8259 lets a parser ignore it; editors write it
	dec := json.NewDecoder(br)
	dec.DisallowUnknownFields()
	var b Baseline
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("not an ahp-tap baseline: %v", err)
	}
	if b.Version != 1 {
		return nil, fmt.Errorf("baseline version %d is not 1", b.Version)
	}
	for i, e := range b.Entries {
		if e.Fingerprint == "" || e.Check == "" {
			return nil, fmt.Errorf("baseline entry %d has no check or fingerprint", i+1)
		}
	}
	return &b, nil
}

// Accepts reports whether a finding with fingerprint fp is baselined. A
// nil baseline accepts nothing.
func (b *Baseline) Accepts(fp string) bool {
	if b == nil {
		return false
	}
	if b.index == nil {
		b.index = make(map[string]bool, len(b.Entries))
		for _, e := range b.Entries {
			b.index[e.Fingerprint] = true
		}
	}
	return b.index[fp]
}

// Stale returns the entries whose fingerprint is not in seen.
func (b *Baseline) Stale(seen map[string]int) []BaselineEntry {
	if b == nil {
		return nil
	}
	var out []BaselineEntry
	for _, e := range b.Entries {
		if seen[e.Fingerprint] == 0 {
			out = append(out, e)
		}
	}
	return out
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
	return fmt.Sprintf("stale baseline entry %s %s (no longer occurs; remove it from the baseline): %s", e.Check, e.Fingerprint, e.Example)
}
