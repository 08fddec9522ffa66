package httpaudit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// scanEveryByte is scan as it was before it skipped to the credentials'
// first bytes: the hash at every position. The reference the faster
// search must agree with.
func (c *Credentials) scanEveryByte(b []byte, out []span) []span {
	if c.count.Load() == 0 {
		return out
	}
	for i := 0; i+MinCredentialLen <= len(b); {
		h := c.anchorOf(binary.LittleEndian.Uint64(b[i:]))
		if !c.filterHas(h) {
			i++
			continue
		}
		c.mu.RLock()
		n := 0
		if bk := c.anchor[h]; bk != nil {
			for _, l := range bk.lens {
				if i+l > len(b) {
					continue
				}
				if _, ok := bk.keys[credKey{l, c.digest(b[i : i+l])}]; ok {
					n = l
					break
				}
			}
		}
		c.mu.RUnlock()
		if n == 0 {
			i++
			continue
		}
		out = append(out, span{start: i, end: i + n})
		i += n
	}
	return out
}

// TestScanFindsWhatEveryByteFinds: with credentials starting with one to
// six distinct bytes (the search skips to them up to four, and hashes
// every byte past that), frequent ones among them ('e', 'x', '"'), the
// search finds exactly the spans the hash at every byte finds, in
// fixtures, in bodies holding the credentials as written, escaped,
// side by side, at the very end and overlapping, and in text dense with
// their first bytes.
func TestScanFindsWhatEveryByteFinds(t *testing.T) {
	var bodies [][]byte
	paths, _ := filepath.Glob("../../shared/ahp/fixtures/draft/*/*.json")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			bodies = append(bodies, data)
		}
	}
	pool := []string{
		"bench-token-0123456789", "exactly8", "eyJhbGciOiJIUzI1NiJ9.e30.sig", "xxxxxxxxxxxy", `"quoted-secret"`,
		"Bearer-like/9f8e+7d6c", "zz-top-secret-zz", "eeeeeeee", "0123456789abcdef",
	}
	rng := rand.New(rand.NewPCG(27, 2))
	filler := []byte(`abcdefghijklmnopqrstuvwxyz "e" x {}:,\/%0`)
	for range 400 {
		n := rng.IntN(3000)
		b := make([]byte, 0, n+200)
		for len(b) < n {
			switch rng.IntN(20) {
			case 0:
				b = append(b, pool[rng.IntN(len(pool))]...)
			case 1:
				c := pool[rng.IntN(len(pool))]
				b = append(b, c[:rng.IntN(len(c))]...) // a prefix: an anchor with no credential
			case 2:
				b = append(b, bytes.Repeat([]byte{"exb\""[rng.IntN(4)]}, rng.IntN(200))...)
			default:
				b = append(b, filler[rng.IntN(len(filler))])
			}
		}
		if rng.IntN(4) == 0 {
			b = append(b, pool[rng.IntN(len(pool))]...) // ending the text
		}
		bodies = append(bodies, b)
	}
	bodies = append(bodies, benchBody(), bytes.Repeat([]byte("x"), 5000), bytes.Repeat([]byte("e"), 77), []byte("eeeeeeee"), []byte("eeeeeee"),
		[]byte("exactly8"), []byte(`{"a":"exactly8"}exactly8`), nil)
	for k := 1; k <= len(pool); k++ {
		var c Credentials
		for _, cred := range pool[:k] {
			c.remember(cred)
		}
		firsts := map[byte]bool{}
		for _, cred := range pool[:k] {
			firsts[cred[0]] = true
		}
		found := 0
		for i, b := range bodies {
			want := c.scanEveryByte(b, nil)
			found += len(want)
			if got := c.scan(b, nil); !slices.Equal(got, want) {
				t.Errorf("%d first bytes, body %d (%d bytes): scan = %v, want %v", len(firsts), i, len(b), got, want)
			}
		}
		if found == 0 {
			t.Fatalf("%d first bytes: no body holds a credential: the test tests nothing", len(firsts))
		}
	}
	// Every draft fixture, with credentials taken from its own text (one
	// to six of them, at spread offsets): the search finds them where
	// the hash at every byte does.
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil || len(data) < 64 {
			continue
		}
		for k := 1; k <= 6; k++ {
			var c Credentials
			for j := range k {
				at := (j*7919 + i*104729) % (len(data) - 24)
				c.remember(string(data[at : at+8+(j*5)%17]))
			}
			want := c.scanEveryByte(data, nil)
			if len(want) == 0 {
				t.Fatalf("%s: no credential taken from it found", p)
			}
			if got := c.scan(data, nil); !slices.Equal(got, want) {
				t.Errorf("%s with %d credentials from its text: scan = %v, want %v", p, k, got, want)
			}
		}
	}
}

// benchBody is bench/lib.sh's 1 KiB intercept request.
func benchBody() []byte {
	id := "000000-t1-000000001"
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"%s",`+
		`"source":"https://harness.example/bench","type":"tool.before","time":"2026-12-02T09:00:00Z",`+
		`"harness":{"name":"bench-harness","version":"1.0.0"},"session":{"id":"sess-bench"},`+
		`"tool":{"name":"read_file","kind":"file_read","input":{"path":"README.md","note":"%s"},"origin":"native"},`+
		`"call":{"id":"call-%s"},"path":"example"},"capabilities":{"effects":["deny"]}}}`, id, id, bytes.Repeat([]byte("x"), 500), id))
}
