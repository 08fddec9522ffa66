package har

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// FuzzHARRead: reading any bytes as a HAR file never panics and never
// loops: every exchange is a request frame followed by a response frame or
// a note, and the entries counted match what was read. Seeds: the HAR files
// in testdata, and a HAR built from every upstream fixture (read at test
// time, never copied here).
func FuzzHARRead(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.har")
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	fixtures, _ := filepath.Glob("../../shared/ahp/fixtures/draft/http/*.json")
	var entries []map[string]any
	for _, p := range fixtures {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		entries = append(entries, map[string]any{
			"startedDateTime": "2026-12-02T16:02:55Z", "time": 3,
			"request": map[string]any{"method": "POST", "url": "http://127.0.0.1:8787/hooks",
				"headers":  []map[string]string{{"name": "Content-Type", "value": "application/json"}},
				"postData": map[string]string{"mimeType": "application/json", "text": string(data)}},
			"response": map[string]any{"status": 200, "content": map[string]any{"mimeType": "application/json", "text": string(data)}},
		})
		if len(entries) == 4 {
			doc, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": entries}})
			f.Add(doc)
			entries = nil
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Sniff(data)
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for n := 0; ; n++ {
			if n > len(data) {
				t.Fatalf("more exchanges than bytes: the reader loops")
			}
			items, err := r.Next()
			if errors.Is(err, io.EOF) || err != nil {
				return
			}
			if len(items) == 0 || items[0].Frame == nil || items[0].Frame.Dir != tap.FromHarness {
				t.Fatalf("exchange %d does not start with the harness's request frame: %+v", n, items)
			}
			for _, it := range items[1:] {
				if (it.Frame == nil) == (it.Note == nil) {
					t.Fatalf("exchange %d: an item is neither a frame nor a note", n)
				}
			}
		}
	})
}
