package metrics

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestListenRefusesRemote(t *testing.T) {
	if ln, err := Listen("http", "", false, nil); ln != nil || err != nil {
		t.Fatalf("Listen without an address = %v, %v", ln, err)
	}
	if ln, err := Listen("http", "0.0.0.0:0", false, nil); err == nil || !strings.Contains(err.Error(), "http: --metrics on ") {
		if ln != nil {
			ln.Close()
		}
		t.Errorf("Listen off loopback = %v, want refused", err)
	}
	var diag bytes.Buffer
	ln, err := Listen("http", "0.0.0.0:0", true, &diag)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if !strings.Contains(diag.String(), "WARNING: --allow-remote") {
		t.Errorf("no warning for remote metrics: %q", diag.String())
	}
	ln, err = Listen("http", "127.0.0.1:0", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"", false, true}, {"127.0.0.1:9464", false, true}, {"localhost:9464", false, true},
		{":9464", false, false}, {"0.0.0.0:9464", false, false}, {"0.0.0.0:9464", true, true},
		{"127.0.0.1", false, false}, {"127.0.0.1:nope", false, false},
	} {
		var diag bytes.Buffer
		if err := CheckAddr(c.addr, c.remote, &diag); (err == nil) != c.ok {
			t.Errorf("CheckAddr(%q, %v) = %v, want ok=%v", c.addr, c.remote, err, c.ok)
		}
	}
}

func TestCheckIDs(t *testing.T) {
	ids := CheckIDs()
	for _, want := range []string{"BASE-2", "TAP-1", "TAP-2"} {
		if !slices.Contains(ids, want) {
			t.Errorf("CheckIDs lacks %s", want)
		}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("CheckIDs lists %s twice", id)
		}
		seen[id] = true
	}
}
