package stdio

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A DirStore is a tap.EventStore kept in a directory, shared by the
// ahp-tap processes a harness starts for a per_event backend (one per
// event), so that a retry seen by one process is judged against the event
// another process saw first (BASE-6, AHP-CORE-004).
//
// Each event is one file named by a hash of its (source, id), written whole
// to a temporary file and then moved into place, so a reader never sees a
// torn record and concurrent starts never corrupt one. The first sighting
// of an event is linked into place only if no other process got there
// first (first writer wins); later updates (the outcome of an exchange)
// replace the record.
type DirStore struct {
	dir  string
	diag io.Writer

	mu     sync.Mutex // guards warned
	warned bool       // a write error was reported on diag
}

// OpenDirStore opens (creating, mode 0700) a state directory. A directory
// every user may write to is refused.
func OpenDirStore(dir string, diag io.Writer) (*DirStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	// Other ahp-tap processes trust these records: a directory every user
	// may write to would let anyone plant or replace them.
	if err := safefile.CheckDir(dir); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("state directory %s is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	if diag == nil {
		diag = io.Discard
	}
	return &DirStore{dir: dir, diag: diag}, nil
}

func (s *DirStore) path(k tap.EventKey) string {
	h := sha256.Sum256([]byte(k.Source + "\x00" + k.ID))
	return filepath.Join(s.dir, "event-"+hex.EncodeToString(h[:16])+".json")
}

// storedEvent is the file format: the key is kept to rule out collisions.
type storedEvent struct {
	Key    tap.EventKey    `json:"key"`
	Record tap.EventRecord `json:"record"`
}

// Load implements tap.EventStore.
func (s *DirStore) Load(k tap.EventKey) (tap.EventRecord, bool) {
	data, err := os.ReadFile(s.path(k))
	if err != nil {
		return tap.EventRecord{}, false
	}
	var e storedEvent
	if json.Unmarshal(data, &e) != nil || e.Key != k {
		return tap.EventRecord{}, false
	}
	return e.Record, true
}

// Store implements tap.EventStore. Errors are reported once on the
// diagnostic writer: state is an aid to auditing, never a reason to
// disturb traffic.
func (s *DirStore) Store(k tap.EventKey, r tap.EventRecord) {
	if err := s.store(k, r); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.warned {
			s.warned = true
			printable.Fprintf(s.diag, "ahp-tap: cannot write --state: %v (cross-process retry checks are incomplete)\n", err)
		}
	}
}

func (s *DirStore) store(k tap.EventKey, r tap.EventRecord) error {
	data, err := json.Marshal(storedEvent{Key: k, Record: r})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".event-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	final := s.path(k)
	if r.Outcome == "" {
		// A first sighting: whoever links first wins; a concurrent
		// process's record of the same event is kept.
		if err := os.Link(tmp.Name(), final); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		return nil
	}
	return os.Rename(tmp.Name(), final)
}
