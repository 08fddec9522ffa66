package tap

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMemoryStoreRoundTrip: what the compact store gives back is what was
// stored, field by field, whatever the digest looks like and whether the
// time is set; a second Store of a key replaces its record.
func TestMemoryStoreRoundTrip(t *testing.T) {
	ev := &Value{Kind: Object, Obj: []Member{{Key: "id", Val: &Value{Kind: String, Str: "e1"}}}}
	first := time.Date(2026, 8, 24, 8, 51, 14, 123456789, time.FixedZone("x", 3600))
	recs := []EventRecord{
		{Digest: ev.Digest(), RPCID: `"e1"`, Method: "hooks/intercept", SessionID: "s1", CallID: "c1",
			Type: "tool.before", First: first, DeadlineMs: 1500, Outcome: OutcomeDeny, Seq: 7},
		{Digest: strings.ToUpper(ev.Digest()), Method: "hooks/observe", Seq: 1}, // not lowercase hex: kept as text
		{Digest: "not a digest", RPCID: "12", SessionID: "séance\x00", First: time.Unix(-1e10, 5)},
		{Digest: ev.Digest()[:63] + "g", Method: "hooks/observe"}, // one byte off hex at the end: kept as text
		{Digest: "/" + ev.Digest()[1:], Method: "hooks/observe"},  // and at the start
		{},
	}
	s := &MemoryStore{}
	for i, r := range recs {
		k := EventKey{Source: "urn:src", ID: fmt.Sprint("id", i)}
		s.Store(k, r)
		got, ok := s.Load(k)
		if !ok {
			t.Fatalf("record %d not found", i)
		}
		if !got.First.Equal(r.First) {
			t.Errorf("record %d: First = %v, want %v", i, got.First, r.First)
		}
		got.First, r.First = time.Time{}, time.Time{}
		if got != r {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, r)
		}
	}
	k := EventKey{Source: "urn:src", ID: "id0"}
	r, _ := s.Load(k)
	r.Outcome, r.CallID = OutcomeNoEffect, "a longer call id than before"
	s.Store(k, r)
	if got, _ := s.Load(k); got.Outcome != OutcomeNoEffect || got.CallID != r.CallID || s.Len() != len(recs) {
		t.Errorf("after an update: %+v, %d events", got, s.Len())
	}
	if _, ok := s.Load(EventKey{Source: "urn:sr", ID: "cid0"}); ok {
		t.Error("a key that packs the same bytes differently was found") // (source, id) split elsewhere
	}
}

// TestMemoryStoreIsBoundedInBytes: long ids make fewer events fit, the
// newest are kept, and one event larger than the store is not kept.
func TestMemoryStoreIsBoundedInBytes(t *testing.T) {
	s := &MemoryStore{MaxBytes: 1 << 20}
	long := strings.Repeat("x", 10<<10)
	for i := range 1000 {
		s.Store(EventKey{Source: "s", ID: fmt.Sprint(i)}, EventRecord{CallID: long, Seq: uint64(i)})
		if s.bytes > s.MaxBytes {
			t.Fatalf("after %d events the store holds %d bytes, more than %d", i+1, s.bytes, s.MaxBytes)
		}
	}
	if n := s.Len(); n < 50 || n > 102 {
		t.Errorf("store holds %d events of 10 KiB in 1 MiB", n)
	}
	for i := 1000 - s.Len(); i < 1000; i++ {
		if r, ok := s.Load(EventKey{Source: "s", ID: fmt.Sprint(i)}); !ok || r.Seq != uint64(i) {
			t.Fatalf("event %d: %+v, %v", i, r, ok)
		}
	}
	s.Store(EventKey{Source: "s", ID: "huge"}, EventRecord{CallID: strings.Repeat("y", 2<<20)})
	if _, ok := s.Load(EventKey{Source: "s", ID: "huge"}); ok || s.bytes > s.MaxBytes {
		t.Errorf("an event larger than the store was kept (%d bytes held)", s.bytes)
	}
}

// TestMemoryStoreForgetsInOrder: across many compactions of the record
// slice, the store holds exactly the newest Max events, each under its
// own key.
func TestMemoryStoreForgetsInOrder(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	const keep = 3000
	s := &MemoryStore{Max: keep}
	for i := range 20 * keep {
		s.Store(EventKey{Source: "s", ID: fmt.Sprint(i)}, EventRecord{Seq: uint64(i)})
		if i%997 == 0 || i == 20*keep-1 {
			for j := max(0, i-keep-5); j <= i; j++ {
				r, ok := s.Load(EventKey{Source: "s", ID: fmt.Sprint(j)})
				if want := j > i-keep; ok != want || ok && r.Seq != uint64(j) {
					t.Fatalf("after event %d: event %d = %+v, %v; want remembered %v", i, j, r, ok, want)
				}
			}
		}
	}
	if len(s.recs) != keep {
		t.Errorf("ring of %d slots for %d events", len(s.recs), keep)
	}
}
