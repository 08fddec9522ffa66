package tap

import (
	"time"
)

// A RuleSet is what a Session checks with: it builds a fresh set of rules
// for each engine and judges a registration document on its own. The rules
// package provides one (rules.Set); tap does not know the rules.
type RuleSet interface {
	// Rules returns a new rule set for one engine (one conversation).
	Rules() []Rule
	// Registration returns the findings about a registration document
	// itself, for the given protocol snapshot.
	Registration(doc *Value, snapshot string) []Finding
}

// SessionConfig says what one link is checked against and where the
// answers go.
type SessionConfig struct {
	// Config is the engine configuration. Transport decides how frames
	// are grouped into conversations: on Stdio every connection (a
	// backend process) has an engine of its own; on every other
	// transport one engine sees every frame. Events is shared by every
	// engine of the session (nil: one in-memory store for the session).
	Config
	// Rules builds each engine's rules and judges the registration.
	Rules RuleSet
	// Sink receives every finding, on the goroutine feeding the session
	// (nil: discarded).
	Sink Sink
	// Recorder (a capture) sees every frame and note before the rules do,
	// including the notes the session makes itself (NoteDropped), so that
	// a replay of the recording gets the same findings. May be nil.
	Recorder Recorder
	// Conn names the link when it is one connection or process (stdio:
	// "stdio:<pid>"); facts about the whole link (frames not audited) are
	// filed under it.
	Conn string
	// MaxLine caps the audit copy of one line of a byte stream (0: no
	// cap); a longer line becomes a truncated frame (TAP-1) that keeps
	// TruncatedPrefix bytes.
	MaxLine int
	// RegistrationReported says the caller reports the findings about
	// Registration itself (a replay or check given --registration lists
	// them once, under the registration's file name). Otherwise the
	// session writes them to Sink when it is created.
	RegistrationReported bool
	// SharedEvents says Events is shared with the sessions of other
	// processes of the same link (a replay's store shared by every
	// process of a capture); a store other than a MemoryStore (a --state
	// directory) is taken as shared anyway.
	SharedEvents bool
	// Watch, when set, sees every frame after the rules judged it, with
	// the exchange it opened or ended (the conduct timeline across the
	// links of a registration is fed this way).
	Watch Watcher
}

// A Watcher sees each frame a session judged, after its rules ran, with
// the exchange the frame opened or ended (nil for a notification, or a
// response that matches no request). Judged runs on the goroutine feeding
// the session; it must not block, and must not retain f or x: the
// exchange's Outcome and Edit are final for a response frame.
type Watcher interface {
	Judged(f *Frame, x *Exchange)
}

// A Clocker is a Watcher that also follows the session's clock: Clock(t)
// says every frame of the link read before t has been judged (the time
// its Judged calls have reached, though the link was quiet). The live
// feeders (the HTTP tap's auditor, the stdio tap's audit process) call it
// at least every QuietClock while their queue is empty; it runs on the
// goroutine feeding the session and must not block.
type Clocker interface {
	Watcher
	Clock(t time.Time)
}

// A Session is one link audited with one configuration: frames, stream
// bytes and transport notes go in, findings come out on the sink. Every
// way ahp-tap sees traffic feeds a Session the same way: the stdio tap
// (through an Auditor), the HTTP proxy (through an Auditor), `check` and
// `replay` (directly). It owns what makes their answers equal:
//
//   - the Framer that cuts byte streams into frames (Stream),
//   - the engines, one per connection or process on stdio, all sharing
//     one event store (retries across per_event processes),
//   - the registration's own findings, reported once at creation,
//   - the recorder, which sees every frame and note the rules see,
//   - the count of frames not audited, kept as NoteDropped notes so that
//     a recording replays to the same findings (TAP-1, and the
//     conversation marked as an excerpt on stream transports),
//   - the list of checks the configuration cannot make (NotChecked).
//
// A Session is not safe for concurrent use: feed it from one goroutine, or
// put it behind an Auditor.
type Session struct {
	cfg     SessionConfig
	sink    Sink
	framer  *Framer
	engines map[string]*Engine // by conn on stdio, else under ""
	order   []*Engine          // every engine in creation order
	seq     uint64             // of the last frame numbered by the session
	lost    uint64             // frames not audited, from NoteDropped notes
	partial bool               // frames were lost on a stream: new engines start partial
	closed  bool
	facts   Facts // traffic judged so far (Facts)
	// Connections of a per_event link retired after their exit
	// (session_retire.go): their records, how many exchanges they forgot,
	// and the names of the most recent.
	retiredRecs      []ExchangeRecord
	retiredForgotten int
	retired          map[string]bool
	retiredFIFO      []string
	// fixed is the one engine of a session made around an existing
	// engine (NewAuditor); nil otherwise.
	fixed *Engine
}

// NewSession returns a session for cfg and writes the registration's own
// findings (ours and those of any --spec schema) to the sink, unless
// cfg.RegistrationReported.
func NewSession(cfg SessionConfig) *Session {
	cfg.Config = cfg.Config.Resolved()
	if cfg.Events == nil {
		cfg.Events = &MemoryStore{}
	}
	s := newSession(cfg)
	if cfg.Registration != nil && cfg.Rules != nil && !cfg.RegistrationReported {
		for _, f := range cfg.Rules.Registration(cfg.Registration, cfg.Snapshot) {
			s.sink.Write(f)
		}
	}
	return s
}

func newSession(cfg SessionConfig) *Session {
	s := &Session{cfg: cfg, sink: cfg.Sink, engines: make(map[string]*Engine)}
	if s.sink == nil {
		s.sink = SinkFunc(func(Finding) {})
	}
	s.framer = s.NewFramer(s.Frame, s.Lost)
	return s
}

// Config returns the session's configuration, with the defaults filled in
// (the snapshot, and the lifecycle the selected hook declares).
func (s *Session) Config() Config { return s.cfg.Config }

// engine returns the engine that judges frames and notes of conn.
func (s *Session) engine(conn string) *Engine {
	if s.cfg.Transport != Stdio {
		conn = ""
	}
	if e, ok := s.engines[conn]; ok {
		return e
	}
	cfg := s.cfg.Config
	cfg.Partial = cfg.Partial || s.partial
	var rules []Rule
	if s.cfg.Rules != nil {
		rules = s.cfg.Rules.Rules()
	}
	e := NewEngine(cfg, rules)
	e.watch = s.cfg.Watch
	s.engines[conn] = e
	s.order = append(s.order, e)
	return e
}

// Frame checks one whole frame: an HTTP body, a standalone message, a
// capture record, a HAR entry, a line a Framer cut. A frame without a
// sequence number is numbered in the order the session sees it; a frame
// without a direction is given the likely one (GuessDirection). The
// recorder sees it, then the rules of its connection's engine.
func (s *Session) Frame(f *Frame) {
	if s.closed {
		return
	}
	if f.Seq == 0 {
		f.Seq = s.seq + 1
	}
	s.seq = max(s.seq, f.Seq)
	if f.Dir == 0 {
		f.Dir = GuessDirection(f)
	}
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.Record(f)
	}
	s.write(s.engine(f.Conn).Feed(f))
	s.facts.add(f)
}

// Stream hands the session bytes read from one direction of a
// line-framed stream (stdio, or an NDJSON file) at time t; it cuts them
// into frames and checks each whole line. dir 0 means the sender of each
// line is guessed.
func (s *Session) Stream(conn string, dir Direction, t time.Time, p []byte) {
	if s.closed {
		return
	}
	s.framer.Write(conn, dir, t, p)
}

// StreamLost says bytes of dir's stream on conn were lost before the next
// Stream (a transport dropped its copy of them): the partial line is
// discarded, and so is everything up to the next newline, and each line
// discarded that way is counted as not audited (NoteDropped). Lines lost
// whole with the bytes are counted by whoever dropped them, with Lost.
// This is how a feed of stream bytes that may lose some (an audit link)
// uses the session's own framer rather than one of its own.
func (s *Session) StreamLost(conn string, dir Direction) {
	if s.closed {
		return
	}
	s.framer.Lost(conn, dir)
}

// Note hands the session a transport fact, in order with the frames. A
// NoteEOF first ends the stream it names (a last line without "\n" is a
// frame too). A NoteDropped counts frames not audited.
func (s *Session) Note(n Note) {
	if s.closed {
		return
	}
	switch n.Kind {
	case NoteEOF:
		s.framer.End(n.Conn, n.Dir, n.Time)
	case NoteDropped:
		s.dropped(n)
		return
	case NoteDeadline:
		// The clock is the link's: every engine (connection) judges the
		// deadlines that passed by then.
		if s.cfg.Recorder != nil {
			s.cfg.Recorder.RecordNote(n)
		}
		for _, e := range s.order {
			s.write(e.Note(n))
		}
		return
	}
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.RecordNote(n)
	}
	if s.retired[n.Conn] {
		return // a late note of a connection whose process has exited
	}
	s.write(s.engine(n.Conn).Note(n))
	if n.Kind == NoteExit {
		s.retire(n.Conn, n.Time)
	}
}

// Lost records that n frames of the link were not audited (the audit
// queue was full, the audit copy of a stream was dropped): a NoteDropped.
func (s *Session) Lost(n uint64) {
	if n == 0 {
		return
	}
	s.Note(Note{Kind: NoteDropped, Time: time.Now(), Conn: s.cfg.Conn, Count: n})
}

// dropped takes a NoteDropped. On a stream transport a lost frame can be
// the request of a response that arrives later (or the reverse), so from
// then on the conversation is an excerpt: correlation rules do not report
// halves whose other half may have been lost. HTTP drops a request and its
// answer together, so its conversations stay whole.
func (s *Session) dropped(n Note) {
	if s.cfg.Recorder != nil {
		s.cfg.Recorder.RecordNote(n)
	}
	s.lost += n.Count
	if s.cfg.Transport == Stdio && !s.partial {
		s.partial = true
		for _, e := range s.order {
			e.Conversation().Partial = true
		}
	}
}

// NotAudited returns how many frames the session was told were not
// audited so far (NoteDropped).
func (s *Session) NotAudited() uint64 { return s.lost }

// Close ends every stream (a last line without "\n" is still checked),
// runs the rules' end-of-stream duties, engine by engine in creation order,
// and reports the frames not audited (TAP-1). Nothing is taken after it.
// It is idempotent.
func (s *Session) Close() {
	if s.closed {
		return
	}
	s.framer.Close()
	s.closed = true
	for _, e := range s.order {
		s.write(e.Finish())
	}
	if s.lost > 0 {
		s.sink.Write(DropFinding(s.lost, "frames"))
	}
}

// Records returns what each exchange of the session concluded, engine by
// engine in creation order.
func (s *Session) Records() []ExchangeRecord {
	out := append([]ExchangeRecord(nil), s.retiredRecs...)
	for _, e := range s.order {
		out = append(out, e.Conversation().Records()...)
	}
	return out
}

func (s *Session) write(fs []Finding) {
	for _, f := range fs {
		s.sink.Write(f)
	}
}

// NotChecked is a check the configuration cannot make, and why.
type NotChecked struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

// NotChecked lists the checks this session's configuration cannot make,
// and why: the catalogue's answer (rules.Set judges each check's Scope
// against the session's Facts), so that every summary and report says the
// same. A RuleSet that does not judge coverage lists nothing.
func (s *Session) NotChecked() []NotChecked {
	if cj, ok := s.cfg.Rules.(CoverageJudge); ok {
		return cj.NotChecked(s.Facts())
	}
	return nil
}

// A CoverageJudge is a RuleSet that also says which checks a session's
// configuration cannot make (rules.Set does, from the catalogue).
type CoverageJudge interface {
	NotChecked(Facts) []NotChecked
}

// sharedEvents reports whether the event store outlives this session's
// process (a --state directory, or a replay's store shared by every
// process of a capture).
func (s *Session) sharedEvents() bool {
	_, private := s.cfg.Events.(*MemoryStore)
	return !private || s.cfg.SharedEvents
}

// hookHasDeadline reports whether any subscription of hook sets timeoutMs.
func hookHasDeadline(hook *Value) bool {
	for _, sub := range hook.Get("subscriptions").Elems() {
		if sub.Get("timeoutMs").IsInteger() {
			return true // of any size (issue 22)
		}
	}
	return false
}

// GuessDirection says who most likely sent a frame whose direction is not
// recorded (a line of an NDJSON file): messages with a method come from
// the harness, everything else from the backend. It decodes f.
func GuessDirection(f *Frame) Direction {
	f.Decode()
	f.DirGuessed = true
	switch f.Msg.(type) {
	case *Request, *Notification:
		return FromHarness
	}
	return FromBackend
}
