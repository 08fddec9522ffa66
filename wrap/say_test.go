package wrap

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestCheckRegistration(t *testing.T) {
	valid := `{"protocolVersion":"draft","hooks":[{"id":"com.example.a","transport":{"type":"stdio","command":"b","lifecycle":"persistent"},
		"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"metadata"}}]}]}`
	for _, c := range []struct {
		doc     string
		invalid bool
		err     string
	}{
		{valid, false, ""},
		{`{"protocolVersion":"draft","hooks":"none"}`, true, ""},
		{`{not json`, false, "wrap: r.json is not JSON"},
	} {
		var w bytes.Buffer
		invalid, err := CheckRegistration(&w, "r.json", []byte(c.doc), tap.DefaultSnapshot, "")
		if invalid != c.invalid || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("CheckRegistration(%s) = %v, %v; want %v, %q; findings:\n%s", c.doc, invalid, err, c.invalid, c.err, w.String())
		}
		if c.invalid && !strings.Contains(w.String(), "r.json: ") {
			t.Errorf("the findings of an invalid registration were not listed: %q", w.String())
		}
	}
}

func TestPrepareConductListsTheWrappedHooks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conduct")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	changes := []Change{{Hook: "a", Action: "wrapped"}, {Hook: "b", Action: "left as it is"}}
	if err := PrepareConduct(&w, dir, changes); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var found bool
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		found = found || (strings.Contains(string(data), `"a"`) && !strings.Contains(string(data), `"b"`))
	}
	if !found || !strings.Contains(w.String(), "conduct findings across the backends in ") {
		t.Errorf("no tapped list of hook a only in %s (%d files); said %q", dir, len(entries), w.String())
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if err := PrepareConduct(&w, open, changes); err == nil {
		t.Error("PrepareConduct accepted a directory every user may write to")
	}
}
