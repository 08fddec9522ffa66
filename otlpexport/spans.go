package otlpexport

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// Span attribute keys. The rpc.*, jsonrpc.*, error.type and
// network.transport names are the OpenTelemetry semantic conventions' for
// a JSON-RPC client span (rpc/json-rpc.md); the ahp.* names are
// ahp-tap's. They are a public interface, as the log attributes are.
const (
	AttrRPCSystem         = "rpc.system.name"
	AttrRPCMethod         = "rpc.method"
	AttrRPCMethodOriginal = "rpc.method_original"
	AttrJSONRPCVersion    = "jsonrpc.protocol.version"
	AttrResponseStatus    = "rpc.response.status_code"
	AttrErrorType         = "error.type"
	AttrNetTransport      = "network.transport"
	AttrHook              = "ahp.hook.id"
	AttrOutcome           = "ahp.outcome"
	AttrEffectTypes       = "ahp.effect.types"
	AttrSpanEnd           = "ahp.span.end"
	AttrFindingsError     = "ahp.findings.error"
	AttrFindingsWarn      = "ahp.findings.warn"
	AttrFindingsInfo      = "ahp.findings.info"
	AttrEventsDropped     = "ahp.findings.not_recorded"
	AttrLevel             = "ahp.level"
	SpanEventFinding      = "ahp.finding"
	maxSpanEvents         = 32       // finding events kept per span; the rest counted
	maxOpenSpans          = 4096     // exchanges waiting for their answer
	maxRecentSpans        = 4096     // ended exchanges a late finding can still be joined to
	maxAttrLen            = 256      // a peer-chosen attribute value is cut there
	maxSpanBytes          = 32 << 20 // spans held (open, ended, queued), estimated; past it new spans and events are counted, not kept
	spanFlushInterval     = 250 * time.Millisecond
)

// How a span ended (ahp.span.end).
const (
	EndAnswer      = "answer"
	EndDeadline    = "deadline"
	EndEndOfStream = "end_of_stream"
	EndEvicted     = "evicted"
	EndTapClosed   = "tap_closed"
)

type spanIDs struct {
	trace [16]byte
	span  [8]byte
}

// A liveSpan is an exchange's span while it can still change: open (no
// answer yet) or ended and waiting one flush for the findings of its last
// frame, which the session writes right after the watcher saw the frame.
type liveSpan struct {
	key         string
	size        int // estimated bytes held
	ids         spanIDs
	reqSeq      uint64
	span        *tracepb.Span
	errs        int
	warns       int
	infos       int
	notRecorded int
	ended       bool
	flushSeen   bool // a flush tick has seen it ended: the next one ships it
}

// spans builds one span per exchange on the audit side (a tap.Watcher and
// a tap.Sink of the findings), and exports them in batches from a bounded
// queue on a goroutine of its own: a full queue, a failed or a timed-out
// export drops spans and counts them.
type spans struct {
	c        *client
	hook     string
	resource *resourcepb.Resource
	scope    *commonpb.InstrumentationScope
	timeout  time.Duration
	diag     func(format string, args ...any)

	mu         sync.Mutex // guards the fields below
	open       map[string]*liveSpan
	fifo       []*liveSpan // open spans in start order (ended ones skipped)
	ended      []*liveSpan
	last       time.Time // of the latest frame judged: an end of stream is no earlier
	live       int       // estimated bytes of the open and ended spans
	recent     map[string]spanIDs
	recentFIFO []string

	q        chan queuedSpan
	queued   atomic.Int64 // estimated bytes of the spans queued or being exported
	inflight atomic.Int64 // spans of the export in progress, not yet counted
	stopping chan struct{}
	done     chan struct{}
	once     sync.Once
	ctx      context.Context
	cancel   context.CancelFunc
	deadline atomic.Int64
	dropped  atomic.Uint64
	exported atomic.Uint64
	warned   atomic.Bool
}

func newSpans(c *client, hook string, res *resourcepb.Resource, scope *commonpb.InstrumentationScope, queue int, timeout time.Duration, diag func(string, ...any)) *spans {
	s := &spans{c: c, hook: hook, resource: res, scope: scope, timeout: timeout, diag: diag,
		open: map[string]*liveSpan{}, recent: map[string]spanIDs{},
		q: make(chan queuedSpan, queue), stopping: make(chan struct{}), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run()
	return s
}

// A queuedSpan waits for export.
type queuedSpan struct {
	sp   *tracepb.Span
	size int
}

// spanKey is an exchange's key: its connection and request id, hashed
// when long (a peer chooses the id).
func spanKey(conn, rpcID string) string {
	k := conn + "\x00" + rpcID
	if len(k) > 128 {
		sum := sha256.Sum256([]byte(k))
		return string(sum[:])
	}
	return k
}

// held is the estimate of what the spans hold now.
func (s *spans) held() int { return s.live + int(s.queued.Load()) }

func attrsSize(kvs []*commonpb.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += len(kv.Key) + len(kv.Value.GetStringValue()) + 48
	}
	return n
}

// Judged opens a span at a request frame and ends it at its answer. It
// runs on the audit goroutine and only touches memory.
func (s *spans) Judged(f *tap.Frame, x *tap.Exchange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The findings of the previous frame were all written before this
	// one was judged: its ended span is complete.
	s.shipEnded(true)
	if f.Time.After(s.last) {
		s.last = f.Time
	}
	if x == nil || x.Request == nil {
		return
	}
	key := spanKey(x.Request.Conn, x.RPCIDText())
	if x.Request == f {
		s.start(key, f, x)
		return
	}
	if _, ok := f.Msg.(*tap.Response); !ok { // the answer (x.Response is set after the watchers)
		return
	}
	ls := s.open[key]
	if ls == nil || ls.reqSeq != x.Request.Seq {
		return
	}
	sp := ls.span
	setStr(sp, AttrOutcome, x.Outcome)
	if r, ok := f.Msg.(*tap.Response); ok {
		if r.Error != nil {
			code := "_OTHER"
			if c := r.Error.Get("code"); c != nil && c.Kind == tap.Number {
				code = c.Str
			}
			setStr(sp, AttrResponseStatus, bounded(code))
			setStr(sp, AttrErrorType, bounded(code))
			setError(sp, "the backend answered a JSON-RPC error "+bounded(code))
		} else if effects := r.Result.Get("effects").Elems(); len(effects) > 0 {
			types := make([]*commonpb.AnyValue, 0, min(len(effects), 16))
			for _, e := range effects[:min(len(effects), 16)] {
				if t, ok := e.Get("type").Text(); ok {
					t = bounded(t)
					types = append(types, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: t}})
					ls.size += len(t) + 32
					s.live += len(t) + 32
				}
			}
			sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: AttrEffectTypes,
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: types}}}})
		}
	}
	switch x.Outcome {
	case tap.OutcomeLate, tap.OutcomeInvalid, tap.OutcomeNotAudited:
		setStr(sp, AttrErrorType, x.Outcome)
		setError(sp, "the exchange ended "+x.Outcome)
	}
	s.end(ls, f.Time, EndAnswer)
}

func (s *spans) start(key string, f *tap.Frame, x *tap.Exchange) {
	if old := s.open[key]; old != nil {
		s.end(old, f.Time, EndEvicted) // a request id used again before its answer
	}
	for len(s.open) >= maxOpenSpans && len(s.fifo) > 0 {
		oldest := s.fifo[0]
		s.fifo = s.fifo[1:]
		if !oldest.ended {
			s.end(oldest, f.Time, EndEvicted)
		}
	}
	ls := &liveSpan{key: key, reqSeq: f.Seq}
	var parent []byte
	if sc, ok := spanContext(traceParent(f, x)); ok {
		// Only the ids are taken: the harness's tracestate (vendor
		// data a header carries) is in no span.
		tid, sid := sc.TraceID(), sc.SpanID()
		ls.ids.trace = tid
		parent = append([]byte(nil), sid[:]...)
	} else {
		_, _ = rand.Read(ls.ids.trace[:])
	}
	_, _ = rand.Read(ls.ids.span[:])
	// The span name must stay a small set: a method the protocol does
	// not define (a peer chooses it) is _OTHER, as the conventions say,
	// the method itself rpc.method_original.
	method, original := x.Method, ""
	if !slices.Contains(vocab.Methods, method) {
		method, original = "_OTHER", bounded(x.Method)
	}
	name := method
	sp := &tracepb.Span{
		TraceId: ls.ids.trace[:], SpanId: ls.ids.span[:], ParentSpanId: parent,
		Name: name, Kind: tracepb.Span_SPAN_KIND_CLIENT,
		StartTimeUnixNano: unixNano(f.Time),
	}
	addStr(sp, AttrRPCSystem, "jsonrpc")
	addStr(sp, AttrRPCMethod, method)
	addStr(sp, AttrRPCMethodOriginal, original)
	addStr(sp, AttrRequestID, bounded(requestID(x.RPCIDText())))
	// Conditionally required when other than 1.0: JSON-RPC 2.0 always is.
	if v, ok := f.Tree.Get("jsonrpc").Text(); ok && v != "1.0" {
		addStr(sp, AttrJSONRPCVersion, bounded(v))
	}
	if et, ok := x.Event.Get("type").Text(); ok {
		addStr(sp, AttrEventType, bounded(et))
	}
	if id, ok := x.Event.Get("id").Text(); ok {
		addStr(sp, AttrEventID, bounded(id))
	}
	addStr(sp, AttrHook, bounded(s.hook))
	addStr(sp, AttrConn, bounded(f.Conn))
	switch f.Transport {
	case tap.Stdio:
		addStr(sp, AttrNetTransport, "pipe")
	case tap.HTTP:
		addStr(sp, AttrNetTransport, "tcp")
	}
	ls.span = sp
	ls.size = 256 + len(sp.Name) + attrsSize(sp.Attributes)
	if s.held()+ls.size > maxSpanBytes {
		s.shipEnded(true)
		if s.held()+ls.size > maxSpanBytes {
			s.dropped.Add(1) // the collector lags far behind: counted, not kept
			return
		}
	}
	s.live += ls.size
	s.open[key] = ls
	s.fifo = append(s.fifo, ls)
	if len(s.fifo) > 2*maxOpenSpans { // ended entries pile up at the front
		keep := s.fifo[:0]
		for _, o := range s.fifo {
			if !o.ended {
				keep = append(keep, o)
			}
		}
		s.fifo = keep
	}
}

// traceParent is the harness's W3C traceparent of the request: the HTTP
// traceparent header, else the event's org.w3c.trace_context extension.
func traceParent(f *tap.Frame, x *tap.Exchange) string {
	if f.HTTP != nil {
		for k, vs := range f.HTTP.Header {
			if strings.EqualFold(k, "traceparent") && len(vs) > 0 {
				return vs[0]
			}
		}
	}
	tp, _ := x.Event.Path("extensions", "org.w3c.trace_context", "traceparent").Text()
	return tp
}

// end ends ls at t (with how it ended); it waits among the ended for the
// next flush.
func (s *spans) end(ls *liveSpan, t time.Time, how string) {
	if ls.ended {
		return
	}
	ls.ended = true
	delete(s.open, ls.key)
	end := unixNano(t)
	if end < ls.span.StartTimeUnixNano {
		end = ls.span.StartTimeUnixNano
	}
	ls.span.EndTimeUnixNano = end
	addStr(ls.span, AttrSpanEnd, how)
	s.ended = append(s.ended, ls)
	s.remember(ls)
}

func (s *spans) remember(ls *liveSpan) {
	if _, ok := s.recent[ls.key]; !ok {
		s.recentFIFO = append(s.recentFIFO, ls.key)
	}
	s.recent[ls.key] = ls.ids
	for len(s.recentFIFO) > maxRecentSpans {
		delete(s.recent, s.recentFIFO[0])
		s.recentFIFO = s.recentFIFO[1:]
	}
}

// finding joins f to its exchange's span, as an event, and returns the
// span's ids for f's log record.
func (s *spans) finding(f tap.Finding) (spanIDs, bool) {
	if f.RPCID == "" {
		return spanIDs{}, false
	}
	key := spanKey(f.Conn, f.RPCID)
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.open[key]
	if ls == nil {
		for _, e := range s.ended {
			if e.key == key {
				ls = e
			}
		}
	}
	if ls == nil {
		ids, ok := s.recent[key]
		return ids, ok
	}
	sp := ls.span
	switch f.Level {
	case tap.Error:
		ls.errs++
		setError(sp, "ahp-tap found "+f.Check)
	case tap.Warn:
		ls.warns++
	default:
		ls.infos++
	}
	if len(sp.Events) < maxSpanEvents && s.held()+1024 <= maxSpanBytes {
		ev := &tracepb.Span_Event{Name: SpanEventFinding, TimeUnixNano: unixNano(f.Time)}
		if ev.TimeUnixNano == 0 {
			ev.TimeUnixNano = unixNano(time.Now())
		}
		kv := func(k, v string) {
			if v != "" {
				ev.Attributes = append(ev.Attributes, strKV(k, v))
			}
		}
		kv(AttrCheck, f.Check)
		kv(AttrRequirement, f.Requirement)
		kv(AttrRule, f.Rule)
		kv(AttrLevel, f.Level.String())
		ev.Attributes = append(ev.Attributes, strKV(AttrPointer, bounded(f.Pointer)))
		if f.Dir != 0 {
			kv(AttrDirection, f.Dir.String())
		}
		sp.Events = append(sp.Events, ev)
		n := 64 + attrsSize(ev.Attributes)
		ls.size += n
		s.live += n
	} else {
		ls.notRecorded++
	}
	if !ls.ended {
		switch {
		case f.Check == string(vocab.Corr3) && !f.Time.IsZero():
			// The deadline passed without an answer: the span ends
			// there, as the harness's call did.
			setStr(sp, AttrErrorType, "deadline_exceeded")
			setError(sp, "no answer by the deadline")
			s.end(ls, f.Time, EndDeadline)
		case f.Check == string(vocab.Corr2) && f.Seq == ls.reqSeq:
			setStr(sp, AttrOutcome, tap.OutcomeUnanswered)
			setStr(sp, AttrErrorType, tap.OutcomeUnanswered)
			setError(sp, "never answered")
			// A never-answered finding is about the request; the
			// stream ended after the last frame read.
			end := f.Time
			if s.last.After(end) {
				end = s.last
			}
			s.end(ls, end, EndEndOfStream)
		}
	}
	return ls.ids, true
}

// shipEnded queues the ended spans: all of them with all set, else those
// a previous flush tick has seen (their last frame's findings are in).
func (s *spans) shipEnded(all bool) {
	keep := s.ended[:0]
	for _, ls := range s.ended {
		if all || ls.flushSeen {
			s.ship(ls)
			continue
		}
		keep = append(keep, ls)
	}
	clear(s.ended[len(keep):])
	s.ended = keep
}

func (s *spans) markEnded() {
	for _, ls := range s.ended {
		ls.flushSeen = true
	}
}

// ship puts the finished span in the export queue, or counts it dropped.
func (s *spans) ship(ls *liveSpan) {
	sp := ls.span
	if ls.errs > 0 {
		sp.Attributes = append(sp.Attributes, intKV(AttrFindingsError, ls.errs))
	}
	if ls.warns > 0 {
		sp.Attributes = append(sp.Attributes, intKV(AttrFindingsWarn, ls.warns))
	}
	if ls.infos > 0 {
		sp.Attributes = append(sp.Attributes, intKV(AttrFindingsInfo, ls.infos))
	}
	if ls.notRecorded > 0 {
		sp.Attributes = append(sp.Attributes, intKV(AttrEventsDropped, ls.notRecorded))
		sp.DroppedEventsCount = uint32(ls.notRecorded)
	}
	s.live -= ls.size
	select {
	case <-s.stopping:
		s.dropped.Add(1)
		return
	default:
	}
	if int(s.queued.Load())+ls.size > maxSpanBytes {
		s.dropped.Add(1)
		return
	}
	s.queued.Add(int64(ls.size))
	select {
	case s.q <- queuedSpan{sp: sp, size: ls.size}:
	default:
		s.queued.Add(-int64(ls.size))
		s.dropped.Add(1)
	}
}

func (s *spans) run() {
	defer close(s.done)
	tick := time.NewTicker(spanFlushInterval)
	defer tick.Stop()
	batch := make([]queuedSpan, 0, DefaultBatch)
	for {
		select {
		case it := <-s.q:
			batch = append(batch, it)
			batch = s.fill(batch)
			s.export(batch, time.Now().Add(s.timeout))
			batch = batch[:0]
		case <-tick.C:
			s.mu.Lock()
			s.shipEnded(false)
			s.markEnded()
			s.mu.Unlock()
		case <-s.stopping:
			deadline := time.Unix(0, s.deadline.Load())
			for time.Now().Before(deadline) {
				batch = s.fill(batch[:0])
				if len(batch) == 0 {
					return
				}
				s.export(batch, deadline)
			}
			s.discard()
			return
		}
	}
}

func (s *spans) fill(batch []queuedSpan) []queuedSpan {
	for len(batch) < DefaultBatch {
		select {
		case it := <-s.q:
			batch = append(batch, it)
		default:
			return batch
		}
	}
	return batch
}

func (s *spans) export(batch []queuedSpan, deadline time.Time) {
	if len(batch) == 0 {
		return
	}
	spans := make([]*tracepb.Span, len(batch))
	size := 0
	for i, it := range batch {
		spans[i] = it.sp
		size += it.size
	}
	clear(batch) // the spans are let go with the request
	defer s.queued.Add(-int64(size))
	ctx, cancel := context.WithDeadline(s.ctx, deadline)
	defer cancel()
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   s.resource,
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: s.scope, Spans: spans}},
	}}}
	var resp coltracepb.ExportTraceServiceResponse
	s.inflight.Store(int64(len(batch)))
	err := s.c.post(ctx, req, &resp)
	if s.inflight.Swap(0) == 0 {
		return // close gave up on this export and counted it
	}
	if err != nil {
		s.dropped.Add(uint64(len(batch)))
		if s.warned.CompareAndSwap(false, true) {
			s.diag("ahp-tap: exporting exchange spans to the OTLP collector at %s failed (%s); spans are dropped and counted (TAP-1), traffic is not affected\n", s.c.target, cut(err.Error()))
		}
		return
	}
	rejected := uint64(resp.GetPartialSuccess().GetRejectedSpans())
	rejected = min(rejected, uint64(len(batch)))
	s.dropped.Add(rejected)
	s.exported.Add(uint64(len(batch)) - rejected)
}

// closeNow stops s at once (New failed after starting it). s may be nil.
func (s *spans) closeNow() {
	if s != nil {
		s.close(0)
	}
}

// close ends the spans still open (the tap stops), ships every span and
// exports what is queued for at most timeout. It reports false when
// already closed.
func (s *spans) close(timeout time.Duration) bool {
	first := false
	s.once.Do(func() {
		first = true
		s.mu.Lock()
		now := time.Now()
		for _, ls := range s.fifo {
			if !ls.ended {
				s.end(ls, now, EndTapClosed)
			}
		}
		s.shipEnded(true)
		s.mu.Unlock()
		s.deadline.Store(time.Now().Add(timeout).UnixNano())
		time.AfterFunc(timeout, s.cancel)
		close(s.stopping)
	})
	if !first {
		return false
	}
	select {
	case <-s.done:
	case <-time.After(timeout + 100*time.Millisecond):
		// An export is stuck past its deadline: give up on it; what is
		// queued is lost (each counted once, by whoever takes it).
		s.dropped.Add(uint64(s.inflight.Swap(0)))
		s.discard()
	}
	return true
}

// discard counts what is queued as dropped, taking it from the queue so
// that no span is counted twice.
func (s *spans) discard() {
	for {
		select {
		case it := <-s.q:
			s.queued.Add(-int64(it.size))
			s.dropped.Add(1)
		default:
			return
		}
	}
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return uint64(t.UnixNano())
}

func bounded(v string) string {
	if len(v) <= maxAttrLen {
		return v
	}
	cut := maxAttrLen
	for cut > 0 && v[cut]&0xC0 == 0x80 {
		cut--
	}
	return v[:cut] + "…"
}

func cut(msg string) string {
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return printable.String(msg)
}

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func intKV(k string, v int) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(v)}}}
}

func addStr(sp *tracepb.Span, k, v string) {
	if v != "" {
		sp.Attributes = append(sp.Attributes, strKV(k, v))
	}
}

// setStr replaces attribute k, or adds it.
func setStr(sp *tracepb.Span, k, v string) {
	for _, a := range sp.Attributes {
		if a.Key == k {
			a.Value = strKV(k, v).Value
			return
		}
	}
	addStr(sp, k, v)
}

func setError(sp *tracepb.Span, msg string) {
	if sp.Status == nil {
		sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: msg}
	}
}
