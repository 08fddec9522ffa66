package httpproxy

import (
	"sync"

	"github.com/ahp-tap/ahp-tap/tap"
)

// DefaultKeepEvents is how many events a long-running HTTP tap remembers
// to judge retries (BASE-6).
const DefaultKeepEvents = 100_000

// EventStore is a tap.EventStore that remembers at most max events,
// forgetting the oldest first: a tap that runs for days keeps bounded
// memory, and a retry of an event forgotten since is judged as a first
// delivery. It is safe for concurrent use.
type EventStore struct {
	mu   sync.Mutex // guards the fields below
	max  int
	m    map[tap.EventKey]tap.EventRecord
	ring []tap.EventKey // insertion order; next is the oldest once full
	next int
}

// NewEventStore returns a store keeping at most max events (max <= 0:
// DefaultKeepEvents).
func NewEventStore(max int) *EventStore {
	if max <= 0 {
		max = DefaultKeepEvents
	}
	return &EventStore{max: max, m: make(map[tap.EventKey]tap.EventRecord)}
}

// Load implements tap.EventStore.
func (s *EventStore) Load(k tap.EventKey) (tap.EventRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[k]
	return r, ok
}

// Store implements tap.EventStore.
func (s *EventStore) Store(k tap.EventKey, r tap.EventRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		s.m[k] = r
		return
	}
	if len(s.ring) < s.max {
		s.ring = append(s.ring, k)
	} else {
		delete(s.m, s.ring[s.next])
		s.ring[s.next] = k
		s.next = (s.next + 1) % s.max
	}
	s.m[k] = r
}
