package httpproxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Fault injection (--inject, issue 25), reverse mode only. With
// Config.Inject set, Serve uses the net/http path (not the relay) and
// reverse reads each request body first, so that the plan can decide on
// the decoded request before it goes upstream. The request still reaches
// the backend; its answer is audited as it sent it, and then forwarded,
// held (delay) or swallowed (the tap answers in its place). Without
// Config.Inject none of this is on the path.

// maxInjectBody is how much of a request body is read to decide on it; a
// longer body goes upstream undecided.
const maxInjectBody = 16 << 20

// injectDecisions counts the request bodies read to decide on (tests:
// without --inject, no request is).
var injectDecisions atomic.Int64

// injectedNote is the note of fault f injected for r on the exchange x.
func (x *exchange) injected(kind tap.NoteKind, f inject.Fault, r inject.Request, detail string) *tap.Note {
	return &tap.Note{Kind: kind, Time: time.Now(), Conn: x.conn, Dir: tap.FromBackend, Fault: string(f.Kind), ID: string(r.ID), Detail: detail, Scenario: f.Scenario}
}

// decideBody reads up to maxInjectBody of the request body and decides on
// it. body is what goes upstream: the bytes read, then the rest.
func (p *Proxy) decideBody(r *http.Request) (body io.ReadCloser, req inject.Request, f inject.Fault, hit bool, err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r.Body, req, f, false, nil
	}
	injectDecisions.Add(1)
	head, err := io.ReadAll(io.LimitReader(r.Body, maxInjectBody+1))
	body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > maxInjectBody {
		return body, req, f, false, err
	}
	if rq, ok := inject.Decode(head); ok {
		req = rq
		f, hit = p.inject.Decide(rq)
	}
	return body, req, f, hit, nil
}

// act answers the harness for an exchange that got fault f: resp is the
// upstream's answer (already read by nothing), which is audited and then
// forwarded late (delay) or swallowed.
func (p *Proxy) act(w http.ResponseWriter, r *http.Request, x *exchange, resp *http.Response, f inject.Fault, req inject.Request) {
	if f.Kind == inject.Delay {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
		p.writeResponse(w, x, resp)
		return
	}
	// The backend's answer: read whole for the audit (the last read
	// finishes the exchange, with this note), never forwarded.
	x.mu.Lock()
	x.swallowed = x.injected(tap.NoteSwallowed, f, req,
		fmt.Sprintf("the backend's answer (HTTP %d) was not forwarded: an injected %s answered in its place [%s]", resp.StatusCode, f.Kind, inject.Notice))
	x.mu.Unlock()
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close() // finishes the exchange: its frames and notes go to the audit
	h := w.Header()
	switch f.Kind {
	case inject.Error, inject.Malformed, inject.InvalidDeny, inject.Unadvertised:
		a := inject.Answer(f, req)
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(a)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(a)
	case inject.Status:
		msg := "injected by ahp-tap (--inject " + f.Spec + ")\n"
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(msg)))
		if f.RetryAfter != "" {
			h.Set("Retry-After", f.RetryAfter)
		}
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, msg)
	case inject.Drop:
		// Never answered: the harness gives up (its deadline), or the
		// tap's shutdown ends the wait.
		select {
		case <-r.Context().Done():
		case <-p.aborted.Done():
		}
		panic(http.ErrAbortHandler)
	default: // inject.Close
		panic(http.ErrAbortHandler) // the connection closes with no response
	}
}
