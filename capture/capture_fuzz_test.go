package capture

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// FuzzCaptureRead: reading any bytes as a capture never panics; every frame
// read writes back to a record that reads as the same frame (raw bytes,
// size, framing, HTTP envelope), so a capture replays what it recorded.
// Seeds: the repository's example capture, and captures built from every
// upstream fixture (read at test time).
func FuzzCaptureRead(f *testing.F) {
	if data, err := os.ReadFile("../cmd/ahp-tap/testdata/example.capture.jsonl"); err == nil {
		f.Add(data)
	}
	paths, _ := filepath.Glob("../../shared/ahp/fixtures/draft/*/*.json*")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.Encode(Header{Type: "header", Format: Format, Version: Version, Transport: tap.Stdio})
		enc.Encode(FrameRecord(&tap.Frame{Seq: 1, Dir: tap.FromHarness, Time: time.Unix(1, 0).UTC(), Transport: tap.Stdio, Raw: data, Framing: tap.Framing{Line: true}}))
		enc.Encode(Record{Type: "note", Note: &tap.Note{Kind: tap.NoteEOF, Dir: tap.FromHarness}})
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items, _ := Read(bytes.NewReader(data))
		for _, it := range items {
			if it.Frame == nil {
				continue
			}
			b, err := json.Marshal(FrameRecord(it.Frame))
			if err != nil {
				t.Fatalf("FrameRecord of a frame read back: %v", err)
			}
			back, err := parseLine(b, 1)
			if err != nil || back.Frame == nil {
				t.Fatalf("record %s does not read back: %v", b, err)
			}
			g, w := back.Frame, it.Frame
			if !bytes.Equal(g.Raw, w.Raw) || g.Size != w.Size || g.Framing != w.Framing || g.Truncated != w.Truncated {
				t.Fatalf("frame read back differs: %+v, want %+v", g, w)
			}
		}
	})
}
