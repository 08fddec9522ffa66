package examples

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The example parts' other transports and lifecycle (issue 21 item 12):
// example-backend --listen serves AHP over HTTP, example-harness --url
// plays its session over HTTP, and example-harness --lifecycle per_event
// starts one backend process per message, so that every use case in the
// README runs on a fresh clone with nothing written by hand.

// exampleMaxBody caps a request body the example backend reads.
const exampleMaxBody = 16 << 20

// ServeHTTP answers AHP over HTTP on addr until ctx ends (SIGINT,
// SIGTERM): one JSON-RPC message per POST, the answer as the body (200,
// application/json), 202 with no body for a notification. The mode's
// faults are the stdio ones where they make sense: crash closes the
// connection without an answer and exits 1, silent never answers.
func (b *Backend) ServeHTTP(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("example-backend: --listen: %v", err)
	}
	if !isLoopback(ln.Addr()) {
		ln.Close()
		return fmt.Errorf("example-backend: --listen %s is not a loopback address; the example backend serves only this host", addr)
	}
	b.http = true
	var mu sync.Mutex // one request at a time: the mode's state (b.n) is shared
	crashed := make(chan struct{})
	var crashOnce sync.Once
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "AHP over HTTP is one JSON-RPC message per POST", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, exampleMaxBody))
		if err != nil {
			return
		}
		var out bytes.Buffer
		mu.Lock()
		b.out = bufio.NewWriter(&out)
		stop := b.handle(body)
		b.out.Flush()
		mu.Unlock()
		switch {
		case stop != nil: // --mode crash
			crashOnce.Do(func() { close(crashed) })
			panic(http.ErrAbortHandler) // the connection is closed without an answer
		case out.Len() == 0 && b.mode == "silent" && !isNotification(body):
			<-r.Context().Done() // never answer; the harness gives up
			return
		case out.Len() == 0:
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(bytes.TrimSuffix(out.Bytes(), []byte("\n")))
	})}
	fmt.Fprintf(b.log, "example-backend: serving AHP over HTTP on http://%s/ (--mode %s); stop it with Ctrl-C or SIGTERM\n", ln.Addr(), b.mode)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	code := 0
	select {
	case <-ctx.Done():
	case <-crashed:
		fmt.Fprintln(b.log, "example-backend: crashing on purpose (--mode crash)")
		code = 1
	case err := <-done:
		return fmt.Errorf("example-backend: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	srv.Shutdown(sctx)
	cancel()
	if code != 0 {
		return ErrCrash
	}
	return nil
}

// isNotification reports whether a JSON-RPC message has no id.
func isNotification(body []byte) bool {
	var probe struct {
		ID any `json:"id"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.ID == nil
}

// httpHarnessLink is the example harness's side of AHP over HTTP: each
// message written is POSTed to url, and the answer's body is handed to the
// harness as a line.
type httpHarnessLink struct {
	url    string
	client *http.Client
	lines  chan<- []byte
	say    io.Writer
}

func (l *httpHarnessLink) Write(p []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, l.url, bytes.NewReader(bytes.TrimSuffix(p, []byte("\n"))))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return len(p), nil // no answer before the deadline: await says so
		}
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, exampleMaxBody))
	switch {
	case resp.StatusCode == http.StatusOK && len(bytes.TrimSpace(body)) > 0:
		l.lines <- append(body, '\n')
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
	default:
		fmt.Fprintf(l.say, "harness: HTTP %d from the backend: %q\n", resp.StatusCode, bytes.TrimSpace(body))
	}
	return len(p), nil
}

// waitAccepting waits until addr accepts TCP connections or d passes, so
// that the harness can be started together with the tap or backend it
// talks to.
func waitAccepting(ctx context.Context, rawURL string, d time.Duration) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("example-harness: %q is not an http:// or https:// URL (--url), or a host:port (--wait-for)", strings.TrimPrefix(rawURL, "http://"))
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("example-harness: nothing accepts connections on %s within --timeout (%v)", host, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// perEventLink starts one backend process per message written (a
// per_event lifecycle, AHP-STDIO-001): the message, then EOF on its stdin;
// its stdout lines go to the harness.
type perEventLink struct {
	argv   []string
	stderr io.Writer
	lines  chan<- []byte
	wg     sync.WaitGroup
	mu     sync.Mutex // guards failed
	failed int        // processes that could not start or exited nonzero
}

func (l *perEventLink) Write(p []byte) (int, error) {
	cmd := exec.Command(l.argv[0], l.argv[1:]...)
	cmd.Stdin = bytes.NewReader(p)
	cmd.Stderr = l.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot start the backend: %w", err)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		br := bufio.NewReaderSize(out, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				l.lines <- line
			}
			if err != nil {
				break
			}
		}
		if err := cmd.Wait(); err != nil {
			l.mu.Lock()
			l.failed++
			l.mu.Unlock()
			fmt.Fprintf(l.stderr, "harness: a per_event backend process ended with %v\n", err)
		}
	}()
	return len(p), nil
}

// wait waits for every process started, at most d; it reports how many
// failed.
func (l *perEventLink) wait(d time.Duration) int {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		fmt.Fprintf(l.stderr, "harness: per_event backend processes still running %s after the session\n", d)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// manifest is the backend's hooks/capabilities answer: over HTTP it names
// the http transport.
func (b *Backend) manifest() map[string]any {
	if !b.http {
		return exampleManifest
	}
	mf := make(map[string]any, len(exampleManifest))
	for k, v := range exampleManifest {
		mf[k] = v
	}
	mf["transports"] = []string{"http"}
	return mf
}

// playLink plays the example session over HTTP (--url) or to one
// backend process per message (--lifecycle per_event).
func playLink(ctx context.Context, cfg HarnessConfig) error {
	argv, snapshot, timeout, url, lifecycle, waitFor := cfg.Argv, cfg.Snapshot, cfg.Timeout, cfg.URL, cfg.Lifecycle, cfg.WaitFor
	h := &exampleHarness{snapshot: snapshot, timeout: timeout, say: cfg.Say, lines: make(chan []byte, 16)}
	switch {
	case lifecycle != "persistent" && lifecycle != "per_event":
		return fmt.Errorf("example-harness: --lifecycle %q is not persistent or per_event", lifecycle)
	case url != "" && len(argv) > 0:
		return fmt.Errorf("example-harness: give --url URL or a backend CMD, not both")
	case url != "" && lifecycle != "persistent":
		return fmt.Errorf("example-harness: --lifecycle is for a stdio backend CMD; over HTTP every message is its own request already")
	case url == "" && len(argv) == 0:
		return fmt.Errorf("example-harness: --lifecycle per_event needs the backend CMD to start for each message")
	case timeout <= 0:
		return fmt.Errorf("example-harness: --timeout must be positive")
	case len(waitFor) > 0 && url == "":
		return fmt.Errorf("example-harness: --wait-for is for --url: a stdio backend is started by the harness itself")
	}
	if url != "" {
		// The backend behind a tap first (a tap that listens before its
		// upstream does would answer 502), then the URL itself.
		for _, addr := range waitFor {
			if err := waitAccepting(ctx, "http://"+addr, timeout); err != nil {
				return err
			}
		}
		if err := waitAccepting(ctx, url, timeout); err != nil {
			return err
		}
		h.out = &httpHarnessLink{url: url, lines: h.lines, say: cfg.Say,
			client: &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
		return h.play(Session(time.Now()))
	}
	link := &perEventLink{argv: argv, stderr: cfg.Say, lines: h.lines}
	h.out = link
	err := h.play(Session(time.Now()))
	if failed := link.wait(timeout + 5*time.Second); failed > 0 && err == nil {
		fmt.Fprintf(cfg.Say, "harness: %d per_event backend processes failed\n", failed)
	}
	return err
}

// isLoopback reports whether a listener's address is on loopback only.
func isLoopback(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
