package capture

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestDetectKind checks what each kind of input is recognised as from its
// first bytes.
func TestDetectKind(t *testing.T) {
	for _, tc := range []struct{ name, head, want string }{
		{"a.json", `{"jsonrpc":"2.0","id":1,"method":"hooks/capabilities"}`, KindMessage},
		{"a.json", `{"hooks":[]}`, KindRegistration},
		{"a.log", `{"check":"BASE-2","level":"error"}` + "\n", KindLog},
		{"a.jsonl", `{"jsonrpc":"2.0"}`, KindStream},
		{"a.txt", "banner\n{\"jsonrpc\":\"2.0\"}\n", KindStream},
		{"a.bin", "\x00\x01\x02", KindBinary},
		{"a.json", "  \n", KindEmpty},
	} {
		if got := DetectKind(tc.name, []byte(tc.head), true); got != tc.want {
			t.Errorf("DetectKind(%s, %q) = %s, want %s", tc.name, tc.head, got, tc.want)
		}
	}
}

// TestOpenInputGzip opens a gzipped stream file: read transparently, its
// kind the stream's, its digest the stored bytes' once read whole.
func TestOpenInputGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("{\"jsonrpc\":\"2.0\"}\n{\"jsonrpc\":\"2.0\"}\n"))
	zw.Close()
	p := filepath.Join(t.TempDir(), "s.jsonl.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	watched := int64(0)
	in, err := OpenInput(p, nil, func(r io.Reader, total int64) io.Reader { watched = total; return r })
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Kind != KindStream || !in.Gzip || in.KindText() != "stream, gzip" || watched != int64(buf.Len()) {
		t.Errorf("kind %q gzip %v text %q watched %d", in.Kind, in.Gzip, in.KindText(), watched)
	}
	for {
		if _, err := in.R.ReadByte(); err != nil {
			break
		}
	}
	if n, sum := in.Sum(); n != uint64(buf.Len()) || len(sum) != 64 {
		t.Errorf("sum %d %q, want the %d stored bytes' SHA-256", n, sum, buf.Len())
	}
}
