package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/tap"
)

// framingRules are the stdio binding's checks (AHP-STDIO-001): framing and
// stdout discipline on every line-framed frame (STDIO-1), and the two
// lifecycles when the registration (or --lifecycle) says which one the
// backend runs under (STDIO-2, STDIO-3). The lifecycle rules take their
// end-of-stream facts (EOF per direction, the backend's exit) as notes.
func framingRules() []tap.Rule {
	return []tap.Rule{
		&lineRule{info("STDIO-1/framing", vocab.Stdio1,
			"one JSON object per line ended by exactly one \\n; nothing on backend stdout that is not a response")},
		&perEventRule{info("STDIO-2/per-event", vocab.Stdio2,
			"per_event: one message then EOF, at most one response, none for a notification, exit 0 after a request")},
		&persistentRule{info("STDIO-3/one-intercept", vocab.Stdio3,
			"persistent: at most one hooks/intercept outstanding at a time")},
	}
}

// lineRule checks STDIO-1 on each line. A run of consecutive non-JSON
// lines (a banner and the log lines after it, or the lines of one
// pretty-printed object) is one fault and gets one finding, at its first
// line.
type lineRule struct{ info tap.RuleInfo }

type lineState struct {
	junk  map[tap.Direction]bool // the previous line from that side was not JSON
	depth map[tap.Direction]int  // open brackets of a pretty-printed object being skipped
}

func (r *lineRule) Info() tap.RuleInfo { return r.info }

func (r *lineRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if !f.Framing.Line || f.Unchecked() {
		return nil
	}
	st := c.RuleState(r.info.ID, func() any {
		return &lineState{junk: map[tap.Direction]bool{}, depth: map[tap.Direction]int{}}
	}).(*lineState)
	var out []tap.Finding
	if d := st.depth[f.Dir]; d > 0 {
		// Inside a pretty-printed object already reported at its first
		// line: its remaining lines are the same fault.
		st.depth[f.Dir] = max(0, d+nesting(f.Raw))
		st.junk[f.Dir] = true
		return nil
	}
	if f.Framing.CRLF {
		// AHP-STDIO-001 says nothing of "\r\n"; a "\r" before "\n" is
		// part of the JSON text's trailing whitespace and suspect.
		out = append(out, r.info.At(f, tap.Warn, "", "the line ends with \\r\\n; AHP stdio messages end with exactly one \\n (a strict reader sees a stray \\r)"))
	}
	if f.Framing.Unterminated {
		// AHP-STDIO-001: every message is terminated by one "\n".
		st.junk[f.Dir] = false
		if f.SyntaxErr != nil {
			return append(out, r.info.At(f, 0, "", "the stream ended in the middle of a line: the last %d bytes had no terminating \\n and are not a whole JSON message", f.Size))
		}
		return append(out, r.info.At(f, 0, "", "the stream ended in the middle of a line: the last %d bytes had no terminating \\n", f.Size))
	}
	switch {
	case len(f.Raw) == 0:
		st.junk[f.Dir] = false
		return append(out, r.info.At(f, 0, "", "an empty line; each line must hold exactly one JSON-RPC message ended by one \\n"))
	case f.SyntaxErr != nil:
		if st.junk[f.Dir] {
			return out // the same run of non-JSON lines, already reported
		}
		st.junk[f.Dir] = true
		if opensObject(bytes.TrimSpace(f.Raw)) {
			st.depth[f.Dir] = nesting(f.Raw)
		}
		return append(out, r.info.At(f, 0, "", "%s", r.describeJunk(f)))
	}
	st.junk[f.Dir] = false
	if f.Dir == tap.FromBackend {
		switch f.Msg.(type) {
		case *tap.Request, *tap.Notification:
			// AHP-STDIO-001: backend stdout carries only responses; AHP
			// has no backend-initiated methods.
			out = append(out, r.info.At(f, 0, "/method", "the backend wrote a message with method %q to stdout; a backend writes only responses (AHP has no backend-initiated methods)", f.Method()))
		}
	}
	return out
}

// describeJunk says what a non-JSON line most likely is.
func (r *lineRule) describeJunk(f *tap.Frame) string {
	line := bytes.TrimSpace(f.Raw)
	excerpt := string(line)
	if len(excerpt) > 60 {
		excerpt = excerpt[:60] + "…"
	}
	if opensObject(line) {
		// AHP-STDIO-001: a pretty-printed object is a framing violation.
		return fmt.Sprintf("the line %q is not a whole JSON object: it looks like the start of a pretty-printed (multi-line) message; each message must be on one line", excerpt)
	}
	if f.Dir == tap.FromBackend {
		// AHP-STDIO-001: no banners, logs or progress on stdout.
		return fmt.Sprintf("the backend wrote non-protocol text to stdout (%q); stdout is only for JSON-RPC responses, diagnostics belong on stderr", excerpt)
	}
	return fmt.Sprintf("the harness sent a line that is not JSON (%q); each line must be one JSON-RPC message", excerpt)
}

// perEventRule checks STDIO-2: under the per_event lifecycle the backend
// process gets exactly one message then EOF, writes at most one response
// and none for a notification, and exits 0 after a request (§1.2).
type perEventRule struct{ info tap.RuleInfo }

type perEventState struct {
	messages  int    // lines from the harness
	responses int    // JSON lines from the backend
	notify    bool   // the first message was a notification
	request   bool   // the first message was a request
	method    string // of the first message
	rpcID     string // of the first message, as written
	eventID   string
	answered  bool // the first request got a response
}

func (r *perEventRule) Info() tap.RuleInfo { return r.info }

func applies(c *tap.Conversation, lifecycle string) bool {
	return c.Lifecycle == lifecycle && c.Transport == tap.Stdio && !c.Partial
}

func (r *perEventRule) state(c *tap.Conversation) *perEventState {
	return c.RuleState(r.info.ID, func() any { return &perEventState{} }).(*perEventState)
}

func (r *perEventRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if !applies(c, vocab.LifecyclePerEvent) || !f.Framing.Line {
		return nil
	}
	st := r.state(c)
	switch f.Dir {
	case tap.FromHarness:
		st.messages++
		if st.messages == 1 {
			st.method = f.Method()
			st.rpcID = tap.IDText(f.RPCID())
			st.eventID, _ = f.Event().Get("id").Text()
			switch f.Msg.(type) {
			case *tap.Request:
				st.request = true
			case *tap.Notification:
				st.notify = true
			}
			return nil
		}
		return []tap.Finding{r.info.At(f, 0, "", "the per_event backend process received message number %d; each process gets exactly one message, then EOF", st.messages)}
	case tap.FromBackend:
		if f.Tree == nil {
			return nil // not JSON: STDIO-1
		}
		st.responses++
		if _, ok := f.Msg.(*tap.Response); ok && st.request {
			st.answered = true
		}
		switch {
		case st.notify:
			return []tap.Finding{r.info.At(f, 0, "", "the backend wrote a line after receiving the notification %s; a per_event backend writes nothing for a notification", st.method)}
		case st.responses > 1:
			return []tap.Finding{r.info.At(f, 0, "", "the backend wrote response line number %d; a per_event backend writes at most one", st.responses)}
		}
	}
	return nil
}

func (r *perEventRule) Note(c *tap.Conversation, n tap.Note) []tap.Finding {
	if !applies(c, vocab.LifecyclePerEvent) {
		return nil
	}
	st := r.state(c)
	at := func(lvl tap.Level, format string, args ...any) tap.Finding {
		fd := r.info.At(nil, lvl, "", format, args...)
		fd.Time, fd.Conn, fd.RPCID, fd.EventID = n.Time, n.Conn, st.rpcID, st.eventID
		return fd
	}
	switch n.Kind {
	case tap.NoteEOF:
		if n.Dir == tap.FromHarness && st.messages == 0 {
			return []tap.Finding{at(0, "the harness closed the backend's stdin without sending a message; a per_event process gets exactly one message")}
		}
	case tap.NoteExit:
		how := fmt.Sprintf("exited with status %d", n.ExitCode)
		if n.Signal != "" {
			how = "was killed by " + n.Signal
		}
		failed := n.Signal != "" || n.ExitCode != 0
		switch {
		case st.request && failed:
			// §1.2: for a request, any nonzero exit is an operational failure.
			return []tap.Finding{at(0, "the per_event backend %s after the %s request; it must exit 0", how, st.method)}
		case st.request && !st.answered:
			return []tap.Finding{at(0, "the per_event backend %s without writing a response to the %s request", how, st.method)}
		case st.notify && failed:
			// §1.2: an observer's exit status never affects execution.
			return []tap.Finding{at(tap.Info, "the per_event backend %s after the %s notification (logged only: it does not affect execution)", how, st.method)}
		}
	}
	return nil
}

// persistentRule checks STDIO-3: a persistent backend has at most one
// hooks/intercept outstanding, because interceptors run serially (§1.2).
type persistentRule struct{ info tap.RuleInfo }

type persistentState struct {
	outstanding map[string]outstandingIntercept // by IDKey, unanswered intercepts
	// order lists the intercepts in request order from head on; entries
	// answered, retried or forgotten since are skipped (and dropped at
	// the head), so finding the oldest outstanding one costs O(1)
	// amortised, not a walk of every outstanding one (issue 28 item 8:
	// replay was quadratic in unanswered intercepts).
	order []outstandingKey
	head  int
}

type outstandingKey struct {
	key string
	seq uint64
}

// oldest returns the oldest intercept still outstanding other than key.
func (st *persistentState) oldest(c *tap.Conversation, key string) *outstandingIntercept {
	for i := st.head; i < len(st.order); i++ {
		q := st.order[i]
		o, ok := st.outstanding[q.key]
		live := ok && o.seq == q.seq
		if live && !c.Remembers(q.key) {
			// The conversation forgot it (memory bound): so does the rule.
			delete(st.outstanding, q.key)
			live = false
		}
		if !live {
			if i == st.head {
				st.head++
			}
			continue
		}
		if q.key != key { // a retry of the same id is BASE-6's business
			return &o
		}
	}
	return nil
}

// push appends an intercept to order, compacting it when more than half
// is behind the head.
func (st *persistentState) push(k outstandingKey) {
	if st.head > 1024 && st.head > len(st.order)/2 {
		st.order = append(st.order[:0], st.order[st.head:]...)
		clear(st.order[len(st.order):cap(st.order)])
		st.head = 0
	}
	st.order = append(st.order, k)
}

// outstandingIntercept is an unanswered intercept: its id as written and
// the sequence number of its request.
type outstandingIntercept struct {
	id  string
	seq uint64
}

func (r *persistentRule) Info() tap.RuleInfo { return r.info }

func (r *persistentRule) Check(c *tap.Conversation, f *tap.Frame) []tap.Finding {
	if !applies(c, vocab.LifecyclePersistent) {
		return nil
	}
	st := c.RuleState(r.info.ID, func() any { return &persistentState{outstanding: map[string]outstandingIntercept{}} }).(*persistentState)
	switch m := f.Msg.(type) {
	case *tap.Request:
		if f.Dir != tap.FromHarness || m.Method != methodIntercept {
			return nil
		}
		key := tap.IDKey(m.ID)
		// Name the oldest one outstanding (not map order: a live run and
		// its replay say the same).
		var out []tap.Finding
		if oldest := st.oldest(c, key); oldest != nil {
			out = append(out, r.info.At(f, 0, "/id", "hooks/intercept %s was sent while hooks/intercept %s was still unanswered; a persistent backend gets at most one intercept at a time", tap.IDText(m.ID), oldest.id))
		}
		st.outstanding[key] = outstandingIntercept{tap.IDText(m.ID), f.Seq}
		st.push(outstandingKey{key, f.Seq})
		return out
	case *tap.Response:
		if f.Dir == tap.FromBackend {
			delete(st.outstanding, tap.IDKey(m.ID))
		}
	}
	return nil
}

// Note takes an answer the tap sent in the backend's place (--inject) as
// the end of the intercept for the harness: it may send the next one,
// whenever the backend's own (swallowed) answer comes.
func (r *persistentRule) Note(c *tap.Conversation, n tap.Note) []tap.Finding {
	if n.Kind != tap.NoteInjected || !inject.Kind(n.Fault).Answers() || !applies(c, vocab.LifecyclePersistent) {
		return nil
	}
	st := c.RuleState(r.info.ID, func() any { return &persistentState{outstanding: map[string]outstandingIntercept{}} }).(*persistentState)
	delete(st.outstanding, inject.IDKey(json.RawMessage(n.ID)))
	return nil
}

// opensObject reports whether a non-JSON line looks like the first line of
// a pretty-printed JSON object or array: it starts with a bracket and leaves
// brackets open.
func opensObject(line []byte) bool {
	return len(line) > 0 && (line[0] == '{' || line[0] == '[') && nesting(line) > 0
}

// nesting returns the net count of opening minus closing brackets and
// braces in line, outside string literals.
func nesting(line []byte) int {
	n, inStr, esc := 0, false, false
	for _, b := range line {
		switch {
		case esc:
			esc = false
		case inStr && b == '\\':
			esc = true
		case b == '"':
			inStr = !inStr
		case inStr:
		case b == '{' || b == '[':
			n++
		case b == '}' || b == ']':
			n--
		}
	}
	return n
}
