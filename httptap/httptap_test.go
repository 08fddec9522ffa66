package httptap

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/httpproxy"
	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/wrap"
)

// syncBuffer is a Diag the test reads while the tap writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runTap runs Run in front of an upstream answering answer, sends one
// intercept through it, stops it, and returns what the harness got, the
// violation log and the summary.
func runTap(t *testing.T, answer string) (got, log, diag string) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	dir := t.TempDir()
	logPath, capPath := filepath.Join(dir, "v.log"), filepath.Join(dir, "s.capture")
	listen := freeAddr(t)
	l, err := linkconf.Load(linkconf.Files{Snapshot: tap.DefaultSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Version: "test", Diag: &out, Routes: []wrap.Route{{Listen: listen, Log: logPath, Capture: capPath}},
			Upstreams: []*url.URL{u}, Link: l, Budget: 64 << 20, LinkBudget: 64 << 20, MaxAudit: 1 << 20,
			Proxy: httpproxy.Config{MaxAuditBody: 1 << 20, UpstreamTimeout: 10 * time.Second, Drain: 10 * time.Second, ReadTimeout: 10 * time.Second},
			Drain: 10 * time.Second, Summary: true, ForceBound: time.Second})
	}()
	var resp *http.Response
	for {
		body := `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1"}}}`
		resp, err = http.Post("http://"+listen+"/agent-hooks", "application/json", strings.NewReader(body))
		if err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run ended before serving: %v; diag:\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond): // the listener is not up yet
		}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v; diag:\n%s", err, out.String())
	}
	logData, _ := os.ReadFile(logPath)
	for _, p := range []string{logPath, capPath} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v (mode %v), want a 0600 file", p, err, st)
		}
	}
	return string(b), string(logData), out.String()
}

func TestRunForwardsAndAudits(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		finding      bool
	}{
		{"conforming", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[{"type":"allow"}]}}`, false},
		{"wrong version", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"2025-06","effects":[{"type":"allow"}]}}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, log, diag := runTap(t, c.answer)
			if got != c.answer {
				t.Errorf("the harness got %q, want the backend's bytes %q", got, c.answer)
			}
			if has := strings.Contains(log, `"check":"BASE-2"`); has != c.finding {
				t.Errorf("BASE-2 in the log = %v, want %v; log:\n%s", has, c.finding, log)
			}
			if !strings.Contains(diag, "ahp-tap http: listening on http://") {
				t.Errorf("no announcement on diag:\n%s", diag)
			}
		})
	}
}

func TestRunRefusesARemoteForwardProxy(t *testing.T) {
	l, err := linkconf.Load(linkconf.Files{Snapshot: tap.DefaultSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		var out syncBuffer
		ctx, stop := context.WithCancel(context.Background())
		if allow {
			stop() // serve nothing: only the setup is under test
		}
		err := Run(ctx, Config{Version: "test", Diag: &out, Routes: []wrap.Route{{Listen: "0.0.0.0:0"}}, Upstreams: []*url.URL{nil},
			Link: l, Budget: 64 << 20, LinkBudget: 64 << 20, MaxAudit: 1 << 20, AllowRemote: allow,
			Proxy: httpproxy.Config{Forward: true, MaxAuditBody: 1 << 20, UpstreamTimeout: time.Second, Drain: time.Second, ReadTimeout: time.Second},
			Drain: time.Second, ForceBound: time.Second})
		stop()
		refused := err != nil && strings.Contains(err.Error(), "would be an open proxy")
		if refused == allow {
			t.Errorf("--forward on 0.0.0.0 with allowRemote=%v: err %v; diag:\n%s", allow, err, out.String())
		}
	}
}
