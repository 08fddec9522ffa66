// Package browser drives a headless Chromium over the DevTools protocol
// (--remote-debugging-pipe), for the tests of pages that keep a
// connection open (the live view's event stream), which Chromium's
// --dump-dom and --virtual-time-budget cannot wait for: a test opens a
// page, runs script in it and polls for what it should show, in real
// time.
package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Find returns a Chromium on PATH, or "".
func Find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// A Browser is one headless Chromium with one page.
type Browser struct {
	cmd     *exec.Cmd
	w       *os.File
	session string

	mu      sync.Mutex
	next    int
	waiting map[int]chan reply
	dead    error
	// budgetExpired gets Emulation.virtualTimeBudgetExpired, the end of
	// the virtual time LoadDOM gives a page.
	budgetExpired chan struct{}
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Start starts Chromium (bin) with a profile in dir and opens a blank page.
func Start(bin, dir string) (*Browser, error) {
	toChrome, ours, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	theirs, fromChrome, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-background-timer-throttling",
		"--remote-debugging-pipe", "--user-data-dir="+dir, "--window-size=800,1000", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // fd 3: Chromium reads, fd 4: Chromium writes
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	toChrome.Close()
	fromChrome.Close()
	b := &Browser{cmd: cmd, w: ours, waiting: map[int]chan reply{}, budgetExpired: make(chan struct{}, 1)}
	go b.read(theirs)
	var targets struct {
		TargetInfos []struct{ TargetID, Type string } `json:"targetInfos"`
	}
	if err := b.call("", "Target.getTargets", nil, &targets); err != nil {
		b.Close()
		return nil, err
	}
	id := ""
	for _, t := range targets.TargetInfos {
		if t.Type == "page" {
			id = t.TargetID
		}
	}
	if id == "" {
		var c struct{ TargetID string }
		if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &c); err != nil {
			b.Close()
			return nil, err
		}
		id = c.TargetID
	}
	var att struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": id, "flatten": true}, &att); err != nil {
		b.Close()
		return nil, err
	}
	b.session = att.SessionID
	return b, nil
}

func (b *Browser) read(r *os.File) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.dead = errors.New("chromium closed its DevTools pipe")
			for _, c := range b.waiting {
				close(c)
			}
			b.waiting = map[int]chan reply{}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID     int    `json:"id"`
			Method string `json:"method"`
			reply
		}
		if json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m) != nil {
			continue
		}
		if m.ID == 0 { // an event
			if m.Method == "Emulation.virtualTimeBudgetExpired" {
				select {
				case b.budgetExpired <- struct{}{}:
				default:
				}
			}
			continue
		}
		b.mu.Lock()
		c := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if c != nil {
			c <- m.reply
		}
	}
}

func (b *Browser) call(session, method string, params any, out any) error {
	b.mu.Lock()
	if b.dead != nil {
		b.mu.Unlock()
		return b.dead
	}
	b.next++
	id := b.next
	c := make(chan reply, 1)
	b.waiting[id] = c
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if _, err := b.w.Write(append(data, 0)); err != nil {
		return err
	}
	select {
	case r, ok := <-c:
		if !ok {
			return errors.New("chromium exited")
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: no answer from chromium", method)
	}
}

// Navigate opens url in the page.
func (b *Browser) Navigate(url string) error {
	return b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
}

// Eval runs a JavaScript expression in the page and returns its value as
// JSON.
func (b *Browser) Eval(expr string) (json.RawMessage, error) {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, fmt.Errorf("script: %s", r.ExceptionDetails.Text)
	}
	return r.Result.Value, nil
}

// WaitFor evaluates expr (a boolean expression) until it is true, within
// bound; it returns false when the bound passed first.
func (b *Browser) WaitFor(expr string, bound time.Duration) (bool, error) {
	// A script error is taken as "not yet": the page may still be
	// loading (its elements not there yet); the last one is returned
	// when the bound passes.
	end := time.Now().Add(bound)
	for {
		v, err := b.Eval("!!(" + expr + ")")
		if err == nil && string(v) == "true" {
			return true, nil
		}
		if time.Now().After(end) {
			return false, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Screenshot is a PNG of the page as it shows now.
func (b *Browser) Screenshot() ([]byte, error) {
	var r struct {
		Data []byte `json:"data"` // base64 in JSON: decoded by encoding/json
	}
	if err := b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	return r.Data, nil
}

// DOM is the page's serialized DOM.
func (b *Browser) DOM() (string, error) {
	v, err := b.Eval("document.documentElement.outerHTML")
	if err != nil {
		return "", err
	}
	var s string
	err = json.Unmarshal(v, &s)
	return s, err
}

// Close ends Chromium.
func (b *Browser) Close() {
	b.w.Close()
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-done
	}
}

// LoadDOM loads url in the page and returns the DOM once the page's script
// ran, as DumpDOM does (5 s of virtual time, which runs the page's timers
// without waiting for them), within 60 s. Each load starts from a blank
// page, so a URL that differs from the last one only in its fragment is
// loaded afresh too. A test that loads many pages starts one Browser and
// calls LoadDOM for each, instead of a Chromium per page (DumpDOM): a
// start costs about 2 CPU-seconds, a load a small part of that.
func (b *Browser) LoadDOM(url string) (string, error) {
	// Virtual time stands still until the new page is there: a budget
	// set on the blank page would run out before the page loaded.
	if err := b.call(b.session, "Emulation.setVirtualTimePolicy", map[string]any{"policy": "pause"}, nil); err != nil {
		return "", err
	}
	if err := b.Navigate("about:blank"); err != nil {
		return "", err
	}
	if err := b.Navigate(url); err != nil {
		return "", err
	}
	select { // an expiry left over from an earlier load
	case <-b.budgetExpired:
	default:
	}
	if err := b.call(b.session, "Emulation.setVirtualTimePolicy",
		map[string]any{"policy": "pauseIfNetworkFetchesPending", "budget": 5000}, nil); err != nil {
		return "", err
	}
	select {
	case <-b.budgetExpired:
	case <-time.After(60 * time.Second):
		return "", fmt.Errorf("%s: the page's virtual time did not run out within 60 s", url)
	}
	if ok, err := b.WaitFor(`document.readyState === "complete"`, 60*time.Second); !ok {
		return "", fmt.Errorf("%s: not loaded within 60 s: %v", url, err)
	}
	return b.DOM()
}

// DumpDOM loads url in a headless Chromium (bin, with a profile in dir)
// and returns the DOM once the page's script ran (Chromium's --dump-dom
// after a 5 s virtual time budget), within 60 s: for pages that do not
// keep a connection open.
func DumpDOM(bin, dir, url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+dir,
		"--virtual-time-budget=5000", "--dump-dom", url)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("chromium: %v\n%s", err, errb.String())
	}
	return out.String(), nil
}
