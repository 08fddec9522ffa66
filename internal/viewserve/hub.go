package viewserve

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Bounds of a Hub.
const (
	// DefaultRing is the bytes of recent messages a Hub keeps for a viewer
	// that connects (older ones are in the capture).
	DefaultRing = 8 << 20
	// ClientQueue is the bytes of messages one viewer may have waiting;
	// past it the viewer skips messages and is told how many.
	ClientQueue = 4 << 20
	// MaxViewers is how many viewers a Hub serves at once.
	MaxViewers = 8
)

// A Hub is the live view of one link (--ui): it sees the link's findings
// (a tap.Sink), its judged frames with their exchanges (a tap.Watcher)
// and its transport notes, turns each into a message of the report's live
// page (report.Live*), keeps the most recent in a ring bounded in bytes,
// and sends them to the viewers as server-sent events. Its methods run on
// the audit goroutine and never wait for a viewer: one that falls behind
// skips messages and is told so. Forwarding never sees it.
type Hub struct {
	name string
	max  int

	mu      sync.Mutex
	ring    [][]byte
	bytes   int
	evicted uint64
	viewers map[*viewer]struct{}
	closed  bool
	done    chan struct{}
}

type viewer struct {
	queue   [][]byte
	bytes   int
	skipped uint64
	wake    chan struct{}
}

// NewHub returns the hub of the link called name (the page's input name),
// keeping ring bytes of recent messages (0: DefaultRing).
func NewHub(name string, ring int) *Hub {
	if ring <= 0 {
		ring = DefaultRing
	}
	return &Hub{name: name, max: ring, viewers: map[*viewer]struct{}{}, done: make(chan struct{})}
}

// Write implements tap.Sink.
func (h *Hub) Write(f tap.Finding) { h.publish(report.LiveFinding(h.name, f)) }

// Judged implements tap.Watcher: the frame, and the exchange it opened
// (pending, with its deadline) or ended.
func (h *Hub) Judged(f *tap.Frame, x *tap.Exchange) {
	h.publish(report.LiveFrame(h.name, f))
	if x != nil {
		h.publish(report.LiveExchange(h.name, f, x))
	}
}

// Note takes a transport note of the link.
func (h *Hub) Note(n tap.Note) { h.publish(report.LiveNote(h.name, n)) }

func (h *Hub) publish(b []byte) {
	if b == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.ring = append(h.ring, b)
	h.bytes += len(b)
	for h.bytes > h.max && len(h.ring) > 1 {
		h.bytes -= len(h.ring[0])
		h.ring[0] = nil
		h.ring = h.ring[1:]
		h.evicted++
	}
	for v := range h.viewers {
		if v.bytes+len(b) > ClientQueue {
			v.skipped++
		} else {
			v.queue = append(v.queue, b)
			v.bytes += len(b)
		}
		select {
		case v.wake <- struct{}{}:
		default:
		}
	}
}

// Viewers is how many viewers are connected.
func (h *Hub) Viewers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.viewers)
}

// Close ends every viewer's stream; later messages are dropped.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// Events serves the messages as server-sent events: first the ring (and
// how many older ones it no longer holds), then each new one as it comes.
func (h *Hub) Events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h.mu.Lock()
	if h.closed || len(h.viewers) >= MaxViewers {
		h.mu.Unlock()
		http.Error(w, "the live view is closed or has too many viewers", http.StatusServiceUnavailable)
		return
	}
	v := &viewer{wake: make(chan struct{}, 1)}
	backlog := append([][]byte(nil), h.ring...)
	evicted := h.evicted
	h.viewers[v] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.viewers, v)
		h.mu.Unlock()
	}()

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	var buf bytes.Buffer
	send := func(msgs ...[]byte) bool {
		buf.Reset()
		for _, m := range msgs {
			buf.WriteString("data: ")
			buf.Write(m) // JSON: no newline inside
			buf.WriteString("\n\n")
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if evicted > 0 && !send(report.LiveEvicted(evicted)) {
		return
	}
	for len(backlog) > 0 {
		n := min(len(backlog), 256)
		if !send(backlog[:n]...) {
			return
		}
		backlog = backlog[n:]
	}
	if !send() { // an empty write: the headers reach the viewer now
		return
	}
	var reported uint64
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-keepAlive.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			fl.Flush()
			continue
		case <-v.wake:
		}
		h.mu.Lock()
		q, skipped := v.queue, v.skipped
		v.queue, v.bytes = nil, 0
		h.mu.Unlock()
		if skipped > reported {
			reported = skipped
			q = append(q, report.LiveSkipped(skipped))
		}
		if len(q) > 0 && !send(q...) {
			return
		}
	}
}

// Handler serves the live page at "/" and its events at "/events", with
// the guards of Page (GET only; loopback Host names only unless
// allowRemote).
func (h *Hub) Handler(page []byte, allowRemote bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/events", h.Events)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/index.html" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	return guard(allowRemote, mux)
}
