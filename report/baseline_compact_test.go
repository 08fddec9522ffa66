package report

import (
	"fmt"
	"strings"
	"testing"
)

// A read baseline answers Accepts and Stale the same whether its
// fingerprints are ahp-tap's (32 hex digits, held decoded) or anything
// else, however many entries it has, and lists at most MaxStaleListed
// stale entries while counting them all.
func TestBaselineCompact(t *testing.T) {
	var b strings.Builder
	b.WriteString("\ufeff{\"version\":1,\"entries\":[")
	const n = baselineKeepWhole + 100
	fp := func(i int) string {
		if i%7 == 0 {
			return fmt.Sprintf("custom-%d", i) // not hex: held as written
		}
		return fmt.Sprintf("%032x", i)
	}
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"check":"BASE-%d","fingerprint":%q,"example":"ex %d","count":2}`, i%3+1, fp(i), i)
	}
	b.WriteString("]}")
	base, err := ReadBaseline(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if base.Len() != n || base.Entries != nil {
		t.Errorf("Len %d, Entries %d; want %d and none kept whole", base.Len(), len(base.Entries), n)
	}
	seen := map[string]int{}
	for i := range n {
		if !base.Accepts(fp(i)) {
			t.Fatalf("entry %d (%s) not accepted", i, fp(i))
		}
		if i != 5 && i != n-1 {
			seen[fp(i)] = 1
		}
	}
	for _, other := range []string{fmt.Sprintf("%032x", n+1), "custom-1", strings.ToUpper(fmt.Sprintf("%032x", 10))} {
		if base.Accepts(other) {
			t.Errorf("Accepts(%q) = true", other)
		}
	}
	stale, count := base.Stale(seen)
	if count != 2 || len(stale) != 2 || stale[0].Fingerprint != fp(5) || stale[0].Example != "ex 5" || stale[0].Check != "BASE-3" ||
		stale[1].Fingerprint != fp(n-1) || stale[1].Example != "" {
		t.Errorf("Stale = %+v, %d", stale, count)
	}
	stale, count = base.Stale(nil)
	if count != n || len(stale) != MaxStaleListed {
		t.Errorf("Stale(nil) lists %d, counts %d; want %d and %d", len(stale), count, MaxStaleListed, n)
	}
	lines := StaleLines(&End{Stale: stale, StaleCount: count})
	if len(lines) != MaxStaleListed+1 || !strings.HasPrefix(lines[MaxStaleListed], fmt.Sprintf("%d more stale baseline entries", n-MaxStaleListed)) {
		t.Errorf("StaleLines: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	// A small baseline keeps its entries whole, as before.
	small, err := ReadBaseline(strings.NewReader(`{"version":1,"entries":[{"check":"EFF-1","fingerprint":"x","example":"e","count":1}]}`))
	if err != nil || len(small.Entries) != 1 || !small.Accepts("x") {
		t.Errorf("small baseline: %+v, %v", small, err)
	}
	if _, err := ReadBaseline(strings.NewReader(`{"version":1,"entries":[],"extra":1}`)); err == nil {
		t.Error("an unknown member was accepted")
	}
}
