package tap

import (
	"github.com/ahp-tap/ahp-tap/vocab"
	"time"
)

// Config says what an Engine checks against.
type Config struct {
	// Snapshot is the protocolVersion to require; "" means DefaultSnapshot.
	Snapshot string
	// Registration is a parsed registration document, or nil.
	Registration *Value
	// HookID selects the backend entry of Registration this link talks to.
	HookID string
	// Timeout is a deadline for responses when no subscription gives one.
	Timeout time.Duration
	// EditContext is the host context for judging standalone responses.
	EditContext *Value
	// Transport and Lifecycle describe the link when known.
	Transport Transport
	Lifecycle string
	// Events remembers events across frames (and processes); nil means
	// an in-memory store.
	Events EventStore
	// Partial says the frames are an excerpt (a standalone file): a
	// response whose request is not in it, or a request whose response is
	// not, is no finding.
	Partial bool
	// KeepAnswered bounds how many answered exchanges the conversation
	// keeps (0: DefaultKeepAnswered, negative: all), so memory stays bounded;
	// a response duplicating an exchange forgotten since is then reported
	// as unsolicited rather than duplicate.
	KeepAnswered int
}

// Stdio lifecycles (Config.Lifecycle), as a registration's
// transport.lifecycle says them.
const (
	LifecyclePersistent = vocab.LifecyclePersistent
	LifecyclePerEvent   = vocab.LifecyclePerEvent
)

// Resolved returns cfg with its defaults filled in: the snapshot, and the
// lifecycle the selected hook declares when none is given.
func (cfg Config) Resolved() Config {
	if cfg.Snapshot == "" {
		cfg.Snapshot = DefaultSnapshot
	}
	if cfg.Lifecycle == "" && cfg.HookID != "" {
		cfg.Lifecycle, _ = FindHook(cfg.Registration, cfg.HookID).Path("transport", "lifecycle").Text()
	}
	return cfg
}

// An Engine feeds frames, in order, through a rule set and one
// Conversation. Frames from a live pipe, an HTTP body or a capture all go
// through Feed and get the same answer. An Engine is not safe for
// concurrent use; Auditor puts one behind a bounded queue.
type Engine struct {
	rules    []Rule
	analyses []*Analysis // what the rules read, each after what it requires
	conv     *Conversation
	seq      uint64  // sequence number of the last frame fed
	done     bool    // Finish has run
	watch    Watcher // sees each judged frame (SessionConfig.Watch); may be nil
}

// NewEngine returns an engine running rules over one conversation.
// The engine runs, once per frame and before the rules, every analysis the
// rules declare (Requirer).
func NewEngine(cfg Config, rules []Rule) *Engine {
	e := &Engine{rules: rules, analyses: analysesOf(rules), conv: newConversation(cfg)}
	e.conv.analyses = e.analyses
	e.conv.results = make([]any, len(e.analyses))
	return e
}

// Conversation returns the engine's conversation state.
func (e *Engine) Conversation() *Conversation { return e.conv }

// Feed decodes f (once), numbers it when f.Seq is zero, and returns what the
// rules found (and a TAP-1 finding when f is a truncated audit copy). Feed recovers from a panicking rule: the panic becomes an
// error finding naming the rule, never a crash of the tap.
func (e *Engine) Feed(f *Frame) (out []Finding) {
	if f.Seq == 0 {
		f.Seq = e.seq + 1
	}
	e.seq = f.Seq
	f.Decode()
	if f.Truncated {
		// The audit copy was capped: say so here, on the one path every
		// frame takes, so a live run and its replay agree.
		out = append(out, TruncatedFinding(f, len(f.Raw)))
	}
	if f.OverBound {
		out = append(out, OverBoundFinding(f))
	}
	e.conv.begin(f)
	out = append(out, e.analyse(f)...)
	out = e.check(f, out)
	if e.watch != nil {
		e.watch.Judged(f, e.conv.cur)
	}
	e.conv.end(f)
	return capFindings(f, out)
}

// Finish runs the end-of-stream duties of every rule that has them. It
// returns nothing on a second call.
func (e *Engine) Finish() (out []Finding) {
	if e.done {
		return nil
	}
	e.done = true
	if n := e.conv.pendingForgotten; n > 0 {
		fd := TapIncomplete.At(nil, Warn, "", "%d unanswered requests were forgotten, the oldest first, to keep those pending within %d MiB: an answer to one of them was not judged, and they are not reported as unanswered", n, MaxPendingBytes>>20)
		fd.Time = e.conv.last
		out = append(out, fd)
	}
	for _, r := range e.rules {
		if fin, ok := r.(Finisher); ok {
			out = append(out, e.finish(r, fin)...)
		}
	}
	return out
}

// check runs every rule on f, in order, and appends what they find to
// out. A rule that panics becomes a TAP-2 finding in its place and the
// rules after it still run: checkFrom contains panics with one deferred
// recover for all the rules of a frame, and check resumes after the rule
// that panicked. (A deferred recover per rule, 32 rules a frame, was ~4% of
// the audit's CPU time.)
func (e *Engine) check(f *Frame, out []Finding) []Finding {
	for next := 0; next < len(e.rules); {
		out, next = e.checkFrom(next, f, out)
	}
	return out
}

// checkFrom runs the rules from e.rules[i] on, appending to found, until
// they are done or one panics; next is the rule to resume with.
func (e *Engine) checkFrom(i int, f *Frame, found []Finding) (out []Finding, next int) {
	out, next = found, i
	defer func() {
		if p := recover(); p != nil {
			// out holds the findings of the rules before e.rules[next];
			// what the panicking rule had found is lost with it.
			out = append(out, internalFinding(e.rules[next], f, p))
			next++
		}
	}()
	for ; next < len(e.rules); next++ {
		if fs := e.rules[next].Check(e.conv, f); len(fs) > 0 {
			out = append(out, fs...) // most rules find nothing: no copy of nothing
		}
	}
	return out, next
}

func (e *Engine) finish(r Rule, fin Finisher) (out []Finding) {
	defer func() {
		if p := recover(); p != nil {
			out = append(out, internalFinding(r, nil, p))
		}
	}()
	return fin.Finish(e.conv)
}

// internalFinding reports a rule that panicked. It is ahp-tap's bug, not the
// traffic's, and says so; traffic is unaffected.
func internalFinding(r Rule, f *Frame, p any) Finding {
	info := r.Info()
	fd := TapInternal.At(f, Error, "", "ahp-tap internal error in rule %s: %v (please report it; traffic was not affected)", info.ID, p)
	return fd
}

// ahp-tap's own checks: facts about the audit itself, not the traffic.
var (
	// TapIncomplete reports audit copies dropped or truncated.
	TapIncomplete = RuleInfo{ID: "TAP-1/incomplete", Check: vocab.Tap1, Level: Warn,
		Summary: "ahp-tap could not audit every frame (audit queue full or audit copy truncated); forwarding was not affected"}
	// TapInternal reports an internal error of a rule.
	TapInternal = RuleInfo{ID: "TAP-2/internal", Check: vocab.Tap2, Level: Error,
		Summary: "an ahp-tap rule failed internally; the frame was forwarded unchanged"}
)

// DropFinding is the TAP-1 finding for n frames not audited.
func DropFinding(n uint64, what string) Finding {
	return TapIncomplete.At(nil, Warn, "", "%d %s not audited: the audit queue was full and ahp-tap dropped its copy (forwarding was not affected)", n, what)
}

// TruncatedFinding is the TAP-1 finding for a frame whose audit copy was capped.
func TruncatedFinding(f *Frame, limit int) Finding {
	return TapIncomplete.At(f, Warn, "", "frame of %d bytes was forwarded whole but audited only as a %d-byte prefix (limit %d); it was not checked", f.Size, len(f.Raw), limit)
}

// OverBoundFinding is the TAP-1 finding for a frame past the audit work
// bound (MaxFrameValues).
func OverBoundFinding(f *Frame) Finding {
	return TapIncomplete.At(f, Warn, "", "frame of %d bytes holds more than %d JSON values (the audit work bound); it was forwarded whole but not checked", f.Size, MaxFrameValues)
}

// MaxFindingsPerFrame bounds the findings one frame reports: a hostile frame
// (200,000 duplicate keys, say) must not flood the violation log. The
// findings past it are counted in one TAP-1 finding.
const MaxFindingsPerFrame = 1000

func capFindings(f *Frame, out []Finding) []Finding {
	if len(out) <= MaxFindingsPerFrame {
		return out
	}
	n := len(out) - MaxFindingsPerFrame
	out = append(out[:MaxFindingsPerFrame:MaxFindingsPerFrame], TapIncomplete.At(f, Warn, "",
		"%d more findings on this frame were not reported (at most %d per frame); forwarding was not affected", n, MaxFindingsPerFrame))
	return out
}
