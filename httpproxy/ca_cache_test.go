package httpproxy

import (
	"crypto/tls"
	"fmt"
	"testing"
)

// TestCertStoreIsABoundedLRU: a harness naming 20,000 hosts must not keep
// 20,000 certificates (issue 8 item 9); recently used hosts stay cached.
func TestCertStoreIsABoundedLRU(t *testing.T) {
	var s certStore
	gens := 0
	gen := func() (*tls.Certificate, error) { gens++; return &tls.Certificate{}, nil }
	s.Fetch("keep.example", gen)
	for i := range 20000 {
		s.Fetch(fmt.Sprintf("h%d.example", i), gen)
		if i%100 == 0 {
			s.Fetch("keep.example", gen) // used often: never evicted
		}
	}
	if n := s.Len(); n != certCacheSize {
		t.Errorf("Len() = %d after 20,001 hosts, want %d", n, certCacheSize)
	}
	before := gens
	s.Fetch("keep.example", gen)
	s.Fetch("h19999.example", gen)
	if gens != before {
		t.Errorf("recently used hosts were regenerated (%d signatures), want them cached", gens-before)
	}
	s.Fetch("h0.example", gen)
	if gens != before+1 {
		t.Errorf("the least recently used host was still cached, want it evicted")
	}
}
