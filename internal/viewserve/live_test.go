package viewserve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr   string
		remote bool
		want   string // "" for accepted
	}{
		{"", false, ""},
		{"127.0.0.1:0", false, ""},
		{"localhost:8790", false, ""},
		{"0.0.0.0:8790", false, "stdio: --ui: 0.0.0.0:8790 is not a loopback address"},
		{":8790", false, "is not a loopback address"},
		{"0.0.0.0:8790", true, ""},
		{"nocolon", false, "stdio: --ui: "},
		{"127.0.0.1:nope", false, "stdio: --ui: "},
	} {
		err := CheckAddr("stdio", c.addr, c.remote)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckAddr(%q, %v) = %v, want accepted", c.addr, c.remote, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckAddr(%q, %v) = %v, want %q", c.addr, c.remote, err, c.want)
		}
	}
}

func TestOpenLiveServesThePage(t *testing.T) {
	if u, err := OpenLive("http", "", false, "v", "draft", io.Discard); u != nil || err != nil {
		t.Fatalf("OpenLive without an address = %v, %v; want nil, nil", u, err)
	}
	if u, err := OpenLive("http", "0.0.0.0:0", false, "v", "draft", io.Discard); err == nil {
		u.Close()
		t.Fatal("OpenLive off loopback without allowRemote was accepted")
	}
	var diag bytes.Buffer
	u, err := OpenLive("http", "127.0.0.1:0", false, "v", "draft", &diag)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if u.View() == nil {
		t.Fatal("View() of an open live view is nil")
	}
	u.Serve()
	addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(diag.String()), "ahp-tap http: live view on http://"), "/")
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("GET the page at %q (diag %q): %v", addr, diag.String(), err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "ahp-tap http · live") {
		t.Errorf("page: %d, %d bytes without its title", resp.StatusCode, len(page))
	}
	var none *Live
	if none.View() != nil {
		t.Error("a nil *Live has a view")
	}
	none.Serve()
	none.Close()
}

func TestServeFileUntilCancelled(t *testing.T) {
	path := t.TempDir() + "/page.html"
	if err := os.WriteFile(path, []byte("<title>the page</title>"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeFile(ctx, ln, path, false) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "the page") {
		t.Errorf("served %q, want the file", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeFile after cancel = %v, want nil", err)
	}
	ln2, _ := Listen("127.0.0.1:0", false)
	ln2.Close() // serving a closed listener fails at once
	if err := ServeFile(context.Background(), ln2, path, false); err == nil {
		t.Error("ServeFile on a closed listener = nil, want its error")
	}
}
