package conduct

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// A Fact is what a Timeline needs of one judged frame, to be carried from
// the audit of a link to the process that holds the registration's
// timeline (live conduct): the frame's bytes and, for an intercept
// request or its answer, what its link concluded of the exchange.
type Fact struct {
	Hook       string          `json:"hook"`
	Time       time.Time       `json:"time"`
	Seq        uint64          `json:"seq,omitempty"`
	Dir        tap.Direction   `json:"direction,omitempty"`
	Conn       string          `json:"conn,omitempty"`
	Raw        string          `json:"raw"`
	Method     string          `json:"method,omitempty"` // of the exchange
	Event      json.RawMessage `json:"event,omitempty"`  // params.event of the exchange's request (answers)
	Sub        json.RawMessage `json:"subscription,omitempty"`
	DeadlineMs int64           `json:"deadlineMs,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	Edit       *FactEdit       `json:"edit,omitempty"`
}

// FactEdit is what the edit evaluator concluded of an intercept answer.
type FactEdit struct {
	Accepted bool            `json:"accepted"`
	Ends     bool            `json:"ends,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"` // the effective tool input
}

// harnessView is exchange x as the harness saw it when the tap injected a
// fault for it (--inject, issue 25): a failure for a fault that answered in
// the backend's place or cut the link (no edit applies), and seen false for
// a dropped answer, which the harness never got. Without a fault, x as it
// is.
func harnessView(x *tap.Exchange) (view *tap.Exchange, seen bool) {
	if x == nil || x.Injected == "" {
		return x, true
	}
	switch inject.Kind(x.Injected) {
	case inject.Drop:
		return x, false
	case inject.Delay, inject.Banner:
		return x, true // the backend's own answer (late, or after a stray line)
	}
	v := *x
	v.Outcome, v.Edit = tap.OutcomeFailure, nil
	return &v, true
}

// answeredAt is when the harness got the answer f to x: f's time, or
// when the tap injected a fault that answered in the backend's place (the
// backend's own answer, swallowed, can come much later).
func answeredAt(f *tap.Frame, x *tap.Exchange) time.Time {
	if x == nil || x.Injected == "" || x.InjectedAt.IsZero() || !x.InjectedAt.Before(f.Time) {
		return f.Time
	}
	switch inject.Kind(x.Injected) {
	case inject.Drop, inject.Delay, inject.Banner:
		return f.Time
	}
	return x.InjectedAt
}

// Relevant reports whether a judged frame matters to a Timeline: a
// hooks/intercept request, its answer, or a hooks/observe notification.
// Only those need to be carried.
func Relevant(f *tap.Frame, x *tap.Exchange) bool {
	if f == nil || f.Unchecked() || f.Msg == nil {
		return false
	}
	switch m := f.Msg.(type) {
	case *tap.Request:
		return m.Method == "hooks/intercept" && x != nil
	case *tap.Notification:
		return m.Method == "hooks/observe"
	case *tap.Response:
		_, seen := harnessView(x)
		return x != nil && x.Method == "hooks/intercept" && seen
	}
	return false
}

// FactOf is the fact of a frame hook's link judged (Relevant).
func FactOf(hook string, f *tap.Frame, x *tap.Exchange) Fact {
	ft := Fact{Hook: hook, Time: f.Time, Seq: f.Seq, Dir: f.Dir, Conn: f.Conn, Raw: string(f.Raw)}
	if x == nil {
		return ft
	}
	if _, ok := f.Msg.(*tap.Response); ok {
		ft.Time = answeredAt(f, x)
		x, _ = harnessView(x)
	}
	ft.Method, ft.Outcome, ft.DeadlineMs = x.Method, x.Outcome, x.Deadline.Milliseconds()
	if x.Subscription != nil {
		ft.Sub = x.Subscription.Canonical()
	}
	if _, ok := f.Msg.(*tap.Response); ok && x.Event != nil {
		ft.Event = x.Event.Canonical()
	}
	if res, ok := x.Edit.(rules.EditResult); ok {
		fe := &FactEdit{Accepted: res.Accepted, Ends: res.Ends}
		if v := res.Effective["input"]; v != nil {
			fe.Input = v.Canonical()
		}
		ft.Edit = fe
	}
	return ft
}

// Take feeds the timeline one fact of a link, as its Link watcher would
// have been fed the frame.
func (t *Timeline) Take(ft Fact) error {
	f := &tap.Frame{Seq: ft.Seq, Dir: ft.Dir, Time: ft.Time, Transport: tap.Stdio, Conn: ft.Conn, Raw: []byte(ft.Raw)}
	f.Decode()
	if f.Msg == nil {
		return errors.New("the fact's frame is not a JSON-RPC message")
	}
	var x *tap.Exchange
	if ft.Method != "" {
		x = &tap.Exchange{Method: ft.Method, Outcome: ft.Outcome, Deadline: time.Duration(ft.DeadlineMs) * time.Millisecond}
		var err error
		if x.Subscription, err = parseRaw(ft.Sub); err != nil {
			return err
		}
		if x.Event, err = parseRaw(ft.Event); err != nil {
			return err
		}
		if x.Event == nil {
			x.Event = f.Event()
		}
		if ft.Edit != nil {
			res := rules.EditResult{Accepted: ft.Edit.Accepted, Ends: ft.Edit.Ends}
			in, err := parseRaw(ft.Edit.Input)
			if err != nil {
				return err
			}
			if in != nil {
				res.Effective = map[string]*tap.Value{"input": in}
			}
			x.Edit = res
		}
	}
	t.take(ft.Hook, f, x)
	return nil
}

func parseRaw(b json.RawMessage) (*tap.Value, error) {
	if len(b) == 0 {
		return nil, nil
	}
	v, _, err := tap.ParseJSON(b)
	return v, err
}
