package tap

import (
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
	"unsafe"
)

// DefaultEventBytes is how many bytes of events a MemoryStore keeps by
// default (see MemoryStore.MaxBytes): about 60,000 events of a typical
// harness (~270 bytes each with their ids), fewer with long ids.
const DefaultEventBytes = 16 << 20

// MemoryStore is the in-process EventStore. It remembers at most Max events
// (0: DefaultKeepEvents) in at most MaxBytes bytes (0: DefaultEventBytes),
// forgetting the oldest first; a retry of an event forgotten since is
// judged as a first delivery (a retry missed, never a finding made up).
//
// Each event costs one string (its key and text fields packed together)
// and a fixed-size record holding the content digest as 32 bytes: about
// 160 bytes plus the length of its ids, where an EventRecord in a map cost
// ~400 (32 MB for the 100,000 events of a replay, bench/reports.sh). It is
// safe for concurrent use.
type MemoryStore struct {
	Max      int
	MaxBytes int

	mu    sync.Mutex        // guards the fields below
	index map[string]uint64 // packed (source, id) → insertion number
	// recs is a ring of count records, the oldest at head, whose
	// insertion number is first.
	recs  []memRecord
	head  int
	count int
	first uint64
	bytes int    // cost (recordCost) of the records held
	buf   []byte // scratch: a key or a packed text
}

// A memRecord is one event: text holds the packed key (source, id) in its
// first keyLen bytes, then the RPC id, method, session id, call id, type
// and, when it is not a SHA-256 in lowercase hex, the digest.
type memRecord struct {
	text       string
	keyLen     int32
	nsec       int32
	sec        int64
	deadlineMs int64
	seq        uint64
	outcome    string
	digest     [32]byte
	flags      uint8
}

const (
	recFirst     = 1 << iota // First is not the zero time
	recHexDigest             // digest holds Digest as bytes (lowercase hex in Load)
)

// recordCost is what one remembered event costs beside its packed text:
// its slot in the ring and its index entry (key header, value, map
// overhead).
const recordCost = int(unsafe.Sizeof(memRecord{})) + 48

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readField returns the field at the start of s and what follows it.
func readField(s string) (string, string) {
	n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	s = s[w:]
	return s[:n], s[n:]
}

func packKey(b []byte, k EventKey) []byte {
	return appendField(appendField(b[:0], k.Source), k.ID)
}

// hexDigest decodes a lowercase hex SHA-256 (what Value.Digest returns),
// in one pass without allocating (it runs for every event remembered).
func hexDigest(s string) ([32]byte, bool) {
	var d [32]byte
	if len(s) != 64 {
		return d, false
	}
	for i := range d {
		hi, ok1 := lowerHex(s[2*i])
		lo, ok2 := lowerHex(s[2*i+1])
		if !ok1 || !ok2 {
			return [32]byte{}, false
		}
		d[i] = hi<<4 | lo
	}
	return d, true
}

// lowerHex is the value of a lowercase hex digit.
func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// pack returns the record of r under key k; its text is in s.buf. A
// non-nil sum is the digest as bytes, r.Digest being unset (storeSum).
func (s *MemoryStore) pack(k EventKey, r EventRecord, sum *[32]byte) memRecord {
	b := packKey(s.buf, k)
	m := memRecord{keyLen: int32(len(b)), deadlineMs: r.DeadlineMs, seq: r.Seq, outcome: r.Outcome}
	for _, f := range []string{r.RPCID, r.Method, r.SessionID, r.CallID, r.Type} {
		b = appendField(b, f)
	}
	if sum != nil {
		m.digest, m.flags = *sum, recHexDigest
	} else if d, ok := hexDigest(r.Digest); ok {
		m.digest, m.flags = d, recHexDigest
	} else {
		b = appendField(b, r.Digest)
	}
	if !r.First.IsZero() {
		m.flags |= recFirst
		m.sec, m.nsec = r.First.Unix(), int32(r.First.Nanosecond())
	}
	s.buf = b
	return m
}

func (m *memRecord) unpack() EventRecord {
	r := EventRecord{DeadlineMs: m.deadlineMs, Seq: m.seq, Outcome: m.outcome}
	rest := m.text[m.keyLen:]
	for _, f := range []*string{&r.RPCID, &r.Method, &r.SessionID, &r.CallID, &r.Type} {
		*f, rest = readField(rest)
	}
	if m.flags&recHexDigest != 0 {
		r.Digest = hex.EncodeToString(m.digest[:])
	} else {
		r.Digest, _ = readField(rest)
	}
	if m.flags&recFirst != 0 {
		r.First = time.Unix(m.sec, int64(m.nsec)).UTC()
	}
	return r
}

// Load implements EventStore.
func (s *MemoryStore) Load(k EventKey) (EventRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = packKey(s.buf, k)
	n, ok := s.index[string(s.buf)]
	if !ok {
		return EventRecord{}, false
	}
	return s.at(n).unpack(), true
}

// Store implements EventStore.
func (s *MemoryStore) Store(k EventKey, r EventRecord) { s.store(k, r, nil) }

// storeSum stores r with the digest sum (what Value.Sum returns; r.Digest
// is ignored): the conversation remembers every event this way, without
// spelling the digest in hex to decode it again here. Load returns it as
// Digest, in lowercase hex.
func (s *MemoryStore) storeSum(k EventKey, r EventRecord, sum [32]byte) { s.store(k, r, &sum) }

// setOutcome sets the Outcome of the event k remembers, as a Load, a
// change of Outcome and a Store would, without unpacking the record; false
// when the store does not hold k.
func (s *MemoryStore) setOutcome(k EventKey, outcome string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = packKey(s.buf, k)
	n, ok := s.index[string(s.buf)]
	if ok {
		s.at(n).outcome = outcome
	}
	return ok
}

func (s *MemoryStore) store(k EventKey, r EventRecord, sum *[32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index == nil {
		s.index = make(map[string]uint64)
	}
	m := s.pack(k, r, sum)
	if n, ok := s.index[string(s.buf[:m.keyLen])]; ok {
		old := s.at(n)
		m.text = old.text
		if m.text != string(s.buf) {
			m.text = string(s.buf)
			s.bytes += len(m.text) - len(old.text)
		}
		*old = m
		return
	}
	maxN, maxBytes := s.Max, s.MaxBytes
	if maxN <= 0 {
		maxN = DefaultKeepEvents
	}
	if maxBytes <= 0 {
		maxBytes = DefaultEventBytes
	}
	cost := recordCost + len(s.buf)
	if cost > maxBytes {
		return // one event larger than the whole store: not remembered
	}
	for s.count >= maxN || s.bytes+cost > maxBytes {
		s.forgetOldest()
	}
	if s.count == len(s.recs) {
		s.grow(min(maxN, nextRingSize(len(s.recs))))
	}
	m.text = string(s.buf)
	s.index[m.text[:m.keyLen]] = s.first + uint64(s.count)
	s.recs[(s.head+s.count)%len(s.recs)] = m
	s.count++
	s.bytes += cost
}

// at returns the record with insertion number n, which the store holds.
func (s *MemoryStore) at(n uint64) *memRecord {
	return &s.recs[(s.head+int(n-s.first))%len(s.recs)]
}

// nextRingSize is the size the ring of n slots grows to: double up to
// 1024 slots (a conversation's first events cost few copies; at most 512
// slots, ~60 KB, stand empty), then by a quarter at a time, so at most a
// fifth of a large ring stands empty.
func nextRingSize(n int) int {
	if n < 1024 {
		return max(64, 2*n)
	}
	return n + n/4
}

// grow moves the ring to a slice of n slots, the oldest first.
func (s *MemoryStore) grow(n int) {
	recs := make([]memRecord, n)
	for i := range s.count {
		recs[i] = s.recs[(s.head+i)%len(s.recs)]
	}
	s.recs, s.head = recs, 0
}

// forgetOldest drops the oldest event.
func (s *MemoryStore) forgetOldest() {
	old := &s.recs[s.head]
	delete(s.index, old.text[:old.keyLen])
	s.bytes -= recordCost + len(old.text)
	*old = memRecord{}
	s.head = (s.head + 1) % len(s.recs)
	s.first++
	s.count--
}

// Len is how many events the store remembers.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.index)
}
