package httpproxy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"hash/maphash"
	"sync"
)

// Loops through chains of taps (issue 28 item 15). A tap pointing at
// itself is caught by its own upstream connections (ownConns); two or more
// taps pointing at each other are not: each sees a new connection from the
// other, and one request multiplied until both ran out of descriptors.
//
// The taps mark such traffic with a hop field, as proxies do with Via, but
// only where a loop is possible, so that the requests of every other
// exchange go upstream exactly as before:
//
//   - a request carrying HopField gets this tap's id appended to it;
//   - a request that does not carry it gets the field (with this tap's id)
//     only when an identical request (same method, field lines and body,
//     Host and target aside, which taps rewrite) is in flight through this
//     tap at the same moment: in a loop, the request comes back while it
//     is still in flight;
//   - a request whose field already holds this tap's id, or MaxHops ids,
//     is answered 508 Loop Detected and not forwarded.
//
// A loop of n taps thus ends after at most two turns. The field reaches a
// backend only with concurrent identical requests (docs/http.md lists it
// among the bytes the tap may change).

// HopField is the request field that lists the taps a request went
// through once a loop was suspected.
const HopField = "Ahp-Tap-Hops"

// MaxHops bounds the taps a request may go through once marked.
const MaxHops = 8

// hops is a tap's side of loop detection: its id and the requests in
// flight, by fingerprint.
type hops struct {
	id   string
	seed maphash.Seed
	mu   sync.Mutex
	live map[uint64]int // requests in flight by fingerprint
}

func newHops() *hops {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &hops{id: "t" + hex.EncodeToString(b[:]), seed: maphash.MakeSeed(), live: map[uint64]int{}}
}

// A hopCheck is what the hops of one request decided.
type hopCheck struct {
	loop  bool   // answer 508: this tap's id is in the field, or MaxHops ids are
	field []byte // when not nil, the HopField value to forward (the field as received is dropped)
	print uint64 // the request's fingerprint, to release when it is over
}

// check looks at a request head before it is forwarded, and at its body
// when the whole of it has arrived with the head (body is nil otherwise):
// two requests are identical only with identical bodies then, so that
// concurrent requests of the same size do not look like a loop. Unless it
// is a loop, the request counts as in flight until release.
func (hp *hops) check(h *head, body []byte) hopCheck {
	var (
		got   []byte
		print maphash.Hash
	)
	print.SetSeed(hp.seed)
	print.Write(h.raw[h.parts[0].s:h.parts[0].e])
	for i := range h.fields {
		f := &h.fields[i]
		name := h.name(f)
		switch {
		case bytes.EqualFold(name, []byte(HopField)):
			got = append(got, h.value(f)...)
			f.drop = true // forwarded with this tap's id added, below
			continue
		case i == h.host || f.drop:
			continue
		}
		print.Write([]byte{0})
		print.Write(name)
		print.Write([]byte{1})
		print.Write(h.value(f))
	}
	print.Write([]byte{2})
	print.Write(body)
	c := hopCheck{print: print.Sum64()}
	if got != nil {
		n := 0
		for _, id := range bytes.Split(got, []byte(",")) {
			id = bytes.TrimSpace(id)
			if len(id) == 0 {
				continue
			}
			n++
			if string(id) == hp.id {
				c.loop = true
			}
		}
		if n >= MaxHops {
			c.loop = true
		}
		if c.loop {
			return c
		}
	}
	hp.mu.Lock()
	dup := hp.live[c.print] > 0
	hp.live[c.print]++
	hp.mu.Unlock()
	switch {
	case got != nil && len(bytes.TrimSpace(got)) > 0:
		c.field = append(append(bytes.TrimSpace(got), ", "...), hp.id...)
	case dup:
		c.field = []byte(hp.id)
	}
	return c
}

// release ends what check counted.
func (hp *hops) release(c hopCheck) {
	if c.loop {
		return
	}
	hp.mu.Lock()
	if hp.live[c.print]--; hp.live[c.print] <= 0 {
		delete(hp.live, c.print)
	}
	hp.mu.Unlock()
}

// withHopField appends the HopField line with value v to a forwarded head
// (which ends with its empty line).
func withHopField(out, v []byte) []byte {
	end := len(out) - 2 // before the empty line's CRLF
	if end < 0 || !bytes.HasSuffix(out, []byte("\r\n\r\n")) {
		return out
	}
	tail := append([]byte(nil), out[end:]...)
	out = append(out[:end], HopField+": "...)
	out = append(out, v...)
	out = append(out, "\r\n"...)
	return append(out, tail...)
}
