package capture

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.jsonl")
	w, err := Create(path, Header{Tool: "ahp-tap test", Snapshot: "draft", Transport: tap.Stdio, Conn: "stdio:1",
		RegistrationDoc: []byte(`{"hooks":[]}`), Hook: "h", Lifecycle: "persistent", TimeoutMs: 750})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 8, 24, 8, 51, 14, 123456789, time.UTC)
	frames := []*tap.Frame{
		{Seq: 1, Dir: tap.FromHarness, Time: now, Transport: tap.Stdio, Conn: "stdio:1", Raw: []byte(`{"a":"é\u2028"}`), Framing: tap.Framing{Line: true}},
		{Seq: 2, Dir: tap.FromBackend, Time: now, Transport: tap.Stdio, Conn: "stdio:1", Raw: []byte("{\"x\":\"\xff\xfe\"}\x00"), Framing: tap.Framing{Line: true, CRLF: true}},
		{Seq: 3, Dir: tap.FromBackend, Time: now, Transport: tap.Stdio, Raw: []byte("partial"), Size: 9000, Truncated: true, Framing: tap.Framing{Line: true, Unterminated: true}},
		{Seq: 4, Dir: tap.FromHarness, Time: now, Transport: tap.HTTP, Conn: "tcp:127.0.0.1:5000", Raw: []byte(`{}`),
			HTTP: &tap.HTTPMeta{Method: "POST", URL: "/agent-hooks", Header: map[string][]string{"Content-Type": {"application/json"}}, AuthorizationCount: 1}},
		{Seq: 5, Dir: tap.FromBackend, Time: now, Transport: tap.HTTP, Raw: []byte{}},
	}
	for _, f := range frames {
		w.Record(f)
	}
	note := tap.Note{Kind: tap.NoteExit, Time: now, Conn: "stdio:1", ExitCode: -1, Signal: "killed"}
	w.RecordNote(note)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("capture mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"raw64":`)) {
		t.Errorf("invalid UTF-8 frame not stored as raw64:\n%s", data)
	}
	items, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(frames)+3 {
		t.Fatalf("Read() = %d items, want %d (header, frames, note, end record)", len(items), len(frames)+3)
	}
	h := items[0].Header
	if h == nil || h.Format != Format || h.Version != Version || h.Conn != "stdio:1" || h.TimeoutMs != 750 || string(h.RegistrationDoc) != `{"hooks":[]}` || !h.EndRecord {
		t.Errorf("header = %+v", h)
	}
	for i, f := range frames {
		g := items[i+1].Frame
		if g == nil {
			t.Fatalf("item %d is not a frame", i+1)
		}
		if !bytes.Equal(g.Raw, f.Raw) {
			t.Errorf("frame %d raw = %q, want %q", i+1, g.Raw, f.Raw)
		}
		wantSize := f.Size
		if wantSize == 0 {
			wantSize = len(f.Raw)
		}
		if g.Seq != f.Seq || g.Dir != f.Dir || !g.Time.Equal(f.Time) || g.Transport != f.Transport || g.Conn != f.Conn ||
			g.Framing != f.Framing || g.Truncated != f.Truncated || g.Size != wantSize {
			t.Errorf("frame %d = %+v, want %+v", i+1, g, f)
		}
		if (f.HTTP == nil) != (g.HTTP == nil) || f.HTTP != nil && (g.HTTP.Method != "POST" || g.HTTP.AuthorizationCount != 1) {
			t.Errorf("frame %d HTTP = %+v, want %+v", i+1, g.HTTP, f.HTTP)
		}
	}
	if n := items[len(items)-2].Note; n == nil || *n != note {
		t.Errorf("note = %+v, want %+v", n, note)
	}
	if n := items[len(items)-1].Note; n == nil || n.Kind != tap.NoteEnd || n.Conn != "stdio:1" {
		t.Errorf("last record = %+v, want the end record of conn stdio:1", n)
	}
}

func TestReadRejects(t *testing.T) {
	t.Parallel()
	if _, err := Read(strings.NewReader("{\"jsonrpc\":\"2.0\"}\n")); !errors.Is(err, ErrNotCapture) {
		t.Errorf("Read(NDJSON) = %v, want ErrNotCapture", err)
	}
	if _, err := Read(strings.NewReader("[1]\n")); !errors.Is(err, ErrNotCapture) {
		t.Errorf("Read(array) = %v, want ErrNotCapture", err)
	}
	newer := fmt.Sprintf(`{"type":"header","format":%q,"version":%d}`+"\n", Format, Version+1)
	if _, err := Read(strings.NewReader(newer)); err == nil || errors.Is(err, ErrNotCapture) || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Read(newer version) = %v, want a version error", err)
	}
	bad := fmt.Sprintf(`{"type":"header","format":%q,"version":1}`+"\n"+`{"type":"frame","raw64":"!!"}`+"\n", Format)
	if _, err := Read(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Read(bad raw64) = %v, want an error naming line 2", err)
	}
	unknown := fmt.Sprintf(`{"type":"header","format":%q,"version":1}`+"\n"+`{"type":"mystery"}`+"\n", Format)
	if _, err := Read(strings.NewReader(unknown)); err == nil {
		t.Error("Read(unknown record type) = nil error")
	}
}

// TestConcurrentAppend: writers with their own descriptors (as per-event
// processes have) appending to one capture never interleave inside a record.
func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.jsonl")
	const writers, each = 8, 40
	big := strings.Repeat("x", 16<<10) // records larger than a pipe buffer
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := Create(path, Header{Transport: tap.Stdio, Conn: fmt.Sprintf("stdio:%d", g)})
			if err != nil {
				t.Error(err)
				return
			}
			defer w.Close()
			for i := range each {
				w.Record(&tap.Frame{Seq: uint64(i + 1), Dir: tap.FromHarness, Conn: fmt.Sprintf("stdio:%d", g), Raw: []byte(big)})
			}
		}()
	}
	wg.Wait()
	data, _ := os.ReadFile(path)
	items, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	perConn := map[string]uint64{}
	frames := 0
	for _, it := range items {
		if it.Frame == nil {
			continue
		}
		frames++
		if it.Frame.Seq != perConn[it.Frame.Conn]+1 {
			t.Fatalf("conn %s: frame %d after %d: per-writer order lost", it.Frame.Conn, it.Frame.Seq, perConn[it.Frame.Conn])
		}
		perConn[it.Frame.Conn] = it.Frame.Seq
	}
	if frames != writers*each {
		t.Errorf("read %d frames, want %d", frames, writers*each)
	}
}

func TestWriteErrorRemembered(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	if _, err := Create("/dev/full", Header{}); err == nil {
		t.Error("Create(/dev/full) = nil error, want the header write to fail")
	}
}
