// Package examples holds ahp-tap's example AHP parts: a backend with
// known faults (example-backend), a harness that plays a short session
// over stdio, per_event processes or HTTP (example-harness), and a harness
// that dispatches to every backend of a registration with one deliberate
// conduct fault. cmd/ahp-tap holds only their flags.
package examples

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/printable"
)

// Version names the harness in its events (set by the command).
var Version = "dev"

// A Mode is one behaviour of the example backend.
type Mode struct{ Name, Help string }

// Modes are the behaviours of `ahp-tap example-backend --mode`.
var Modes = []Mode{
	{"conforming", "answer correctly: deny dangerous tool calls, no effects otherwise, a manifest for hooks/capabilities"},
	{"demo", "conforming, plus the faults ahp-tap demo shows: a banner and a log line on stdout, an unadvertised effect, a wrong protocolVersion"},
	{"banner", "conforming, but print a startup banner on stdout first (STDIO-1)"},
	{"wrong-version", `answer every request with protocolVersion "2025-01-01" (BASE-2)`},
	{"unadvertised", "answer every intercept with a modify(input) effect whatever was advertised (BASE-9)"},
	{"crash", "exit 1 on the first request without answering (STDIO-2, CORR-2)"},
	{"silent", "never answer (deadline handling, CORR-2/CORR-3)"},
	{"slow", "answer correctly after --delay (CORR-3)"},
	{"error", "answer every intercept with a JSON-RPC error (an operational failure: the harness applies the failure policy)"},
}

// ModeHelp lists the modes, one per line, for a flag's help.
func ModeHelp() string {
	var b strings.Builder
	for _, m := range Modes {
		fmt.Fprintf(&b, "\n    %-13s %s", m.Name, m.Help)
	}
	return b.String()
}

// dangerous is what the example backend's policy denies.
var dangerous = regexp.MustCompile(`--force|rm -rf|\.ssh/|id_rsa`)

// exampleRequest is what the example backend reads of a message.
type exampleRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Event           struct {
			Type string `json:"type"`
			Tool struct {
				Name  string         `json:"name"`
				Input map[string]any `json:"input"`
			} `json:"tool"`
		} `json:"event"`
		Capabilities struct {
			Effects []string `json:"effects"`
		} `json:"capabilities"`
	} `json:"params"`
}

// ErrCrash is what a backend in --mode crash ends with (exit status 1).
var ErrCrash = errors.New("example-backend: crashed on purpose (--mode crash)")

// NewBackend is an example backend in mode (one of Modes), writing its
// answers to out and its notices to log.
func NewBackend(mode string, delay time.Duration, snapshot string, out, log io.Writer) (*Backend, error) {
	if !slices.ContainsFunc(Modes, func(x Mode) bool { return x.Name == mode }) {
		return nil, fmt.Errorf("example-backend: unknown --mode %q (one of:%s)", mode, ModeHelp())
	}
	return &Backend{mode: mode, delay: delay, snapshot: snapshot, out: bufio.NewWriter(out), log: log}, nil
}

// ServeStdio is the example AHP backend on stdio: one JSON-RPC message
// per line in, one response per request out. It serves both lifecycles:
// it answers until EOF on in, so a per_event harness that sends one
// message and closes stdin gets one answer and a nil error.
func (b *Backend) ServeStdio(in io.Reader) error {
	if b.mode == "demo" || b.mode == "banner" {
		// AHP-STDIO-001 forbids this: the deliberate fault STDIO-1 reports.
		fmt.Fprintln(b.out, "example-backend 1.0 ready (policy: deny force pushes, rm -rf and ssh keys)")
		b.out.Flush()
	}
	br := bufio.NewReaderSize(in, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if stop := b.handle(line); stop != nil {
				return stop
			}
		}
		if err != nil {
			return nil
		}
	}
}

// A Backend is the example AHP backend.
type Backend struct {
	mode     string
	delay    time.Duration
	snapshot string
	out      *bufio.Writer
	log      io.Writer
	n        int  // intercepts answered
	http     bool // --listen: the manifest names the http transport
}

func (b *Backend) handle(line []byte) error {
	var req exampleRequest
	if err := json.Unmarshal(line, &req); err != nil {
		printable.Fprintf(b.log, "example-backend: ignoring a line that is not JSON: %v\n", err)
		return nil
	}
	if req.ID == nil {
		// A notification (hooks/observe) is never answered (AHP-RPC-002).
		printable.Fprintf(b.log, "example-backend: observed %s\n", req.Params.Event.Type)
		return nil
	}
	switch b.mode {
	case "crash":
		fmt.Fprintln(b.log, "example-backend: crashing on purpose (--mode crash)")
		return ErrCrash
	case "silent":
		return nil
	case "slow":
		time.Sleep(b.delay)
	}
	version := b.snapshot
	if b.mode == "wrong-version" {
		version = "2025-01-01"
	}
	switch {
	case req.Params.ProtocolVersion != b.snapshot:
		b.reply(req.ID, "error", map[string]any{"code": -32001, "message": "unsupported protocol version",
			"data": map[string]any{"supported": []string{b.snapshot}}})
	case req.Method == "hooks/capabilities":
		b.reply(req.ID, "result", map[string]any{"protocolVersion": version, "manifest": b.manifest()})
	case req.Method == "hooks/intercept" && b.mode == "error":
		b.reply(req.ID, "error", map[string]any{"code": -32603, "message": "policy engine unavailable (--mode error)"})
	case req.Method == "hooks/intercept":
		b.n++
		b.reply(req.ID, "result", b.decide(&req, version))
	default:
		b.reply(req.ID, "error", map[string]any{"code": -32601, "message": "method not found"})
	}
	return nil
}

// decide is the example policy.
func (b *Backend) decide(req *exampleRequest, version string) map[string]any {
	ev := req.Params.Event
	command, _ := ev.Tool.Input["command"].(string)
	path, _ := ev.Tool.Input["path"].(string)
	effects := []any{}
	switch {
	case b.mode == "unadvertised" || (b.mode == "demo" && strings.Contains(path, ".ssh/")):
		// Deliberate fault: modify was not advertised (AHP-CAP-001).
		effects = append(effects, map[string]any{"type": "modify", "target": "input", "operation": "merge",
			"value": map[string]any{"path": "/dev/null"}})
	case ev.Type == "tool.before" && (dangerous.MatchString(command) || dangerous.MatchString(path)):
		effects = append(effects, map[string]any{"type": "deny", "reason": "Blocked by the example policy: " + ev.Tool.Name + " " + command + path,
			"code": "com.example.policy.dangerous"})
	}
	if b.mode == "demo" && strings.HasPrefix(command, "npm") {
		version = "2025-01-01" // deliberate fault: BASE-2
	}
	if b.mode == "demo" && b.n == 3 {
		// Deliberate fault: a log line on stdout (STDIO-1).
		printable.Fprintf(b.out, "[debug] evaluating request %s\n", req.ID)
	}
	return map[string]any{"protocolVersion": version, "effects": effects}
}

func (b *Backend) reply(id json.RawMessage, kind string, body any) {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, kind: body})
	b.out.Write(msg)
	b.out.WriteByte('\n')
	b.out.Flush()
}

// exampleManifest is the example backend's answer to hooks/capabilities.
var exampleManifest = map[string]any{
	"events": []any{
		map[string]any{"event": "tool.before", "modes": []string{"intercept", "observe"}, "capabilities": map[string]any{"effects": []string{"deny"}}},
		map[string]any{"event": "tool.after", "modes": []string{"observe"}, "capabilities": map[string]any{"effects": []string{}}},
	},
	"gaps":                      []any{map[string]any{"path": "model", "reason": "the example backend does not look at model traffic"}},
	"transports":                []string{"stdio"},
	"authentication":            []string{},
	"toolPaths":                 []string{"native"},
	"contentCategories":         []string{"text"},
	"limits":                    map[string]any{"minTimeoutMs": 100, "maxTimeoutMs": 30000},
	"managedPolicy":             map[string]any{"scopes": []string{"user"}, "disableable": true},
	"correlationIdentityFields": []string{"id", "source", "session.id", "call.id"},
}

// harnessSource is the example harness's event source URI.
const harnessSource = "urn:example:ahp-tap:demo-harness"

// A Step is one message of the example harness's session.
type Step struct {
	Method string // hooks/capabilities, hooks/intercept or hooks/observe
	Event  map[string]any
	Say    string // what the step is, for people
}

// Session is the example harness's session: discovery, intercepts (one
// the example policy denies) and observations.
func Session(now time.Time) []Step {
	ts := func(i int) string { return now.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339) }
	harness := map[string]any{"name": "ahp-tap-example-harness", "version": Version}
	session := map[string]any{"id": "sess_demo_1", "cwd": "/work/project"}
	toolBefore := func(i int, call, name, kind string, input map[string]any) map[string]any {
		return map[string]any{"id": fmt.Sprintf("evt_demo_%d", i), "source": harnessSource, "type": "tool.before", "time": ts(i),
			"harness": harness, "session": session, "tool": map[string]any{"name": name, "kind": kind, "input": input, "origin": "native"},
			"call": map[string]any{"id": call}, "path": "native"}
	}
	return []Step{
		{Method: "hooks/capabilities", Say: "discovery: hooks/capabilities"},
		{Method: "hooks/intercept", Say: "tool.before Bash `ls -la`", Event: toolBefore(1, "call_1", "Bash", "shell", map[string]any{"command": "ls -la"})},
		{Method: "hooks/observe", Say: "tool.after Bash `ls -la` (observe)", Event: map[string]any{
			"id": "evt_demo_2", "source": harnessSource, "type": "tool.after", "time": ts(2), "harness": harness, "session": session,
			"tool": map[string]any{"name": "Bash", "kind": "shell", "input": map[string]any{"command": "ls -la"}, "origin": "native"},
			"call": map[string]any{"id": "call_1"}, "path": "native", "outcome": "ok", "execution": map[string]any{"status": "executed"}, "items": []any{}}},
		{Method: "hooks/intercept", Say: "tool.before Bash `git push --force origin main`", Event: toolBefore(3, "call_2", "Bash", "shell", map[string]any{"command": "git push --force origin main"})},
		{Method: "hooks/intercept", Say: "tool.before Read `~/.ssh/id_ed25519`", Event: toolBefore(4, "call_3", "Read", "file_read", map[string]any{"path": "/home/dev/.ssh/id_ed25519"})},
		{Method: "hooks/intercept", Say: "tool.before Bash `npm test`", Event: toolBefore(5, "call_4", "Bash", "shell", map[string]any{"command": "npm test"})},
		{Method: "hooks/observe", Say: "session.end (observe)", Event: map[string]any{
			"id": "evt_demo_6", "source": harnessSource, "type": "session.end", "time": ts(6), "harness": harness, "session": session,
			"outcome": "completed", "reason": "demo finished"}},
	}
}

// HarnessConfig is what the example harness plays and to whom.
type HarnessConfig struct {
	Snapshot  string        // the protocol snapshot to send
	Timeout   time.Duration // how long to wait for each response
	URL       string        // play over HTTP to URL
	Lifecycle string        // of the backend Argv: persistent or per_event
	WaitFor   []string      // with URL: first wait until these host:ports accept connections
	Argv      []string      // the backend to start ("": speak on Stdin and Stdout)
	Stdin     io.Reader
	Stdout    io.Writer
	Say       io.Writer // what each answer means, for people (stderr)
}

// Play is the example AHP harness: it plays a short session (discovery,
// intercepts with a deny, observations) against a backend and says on
// Say what each answer means. With Argv it starts the backend itself, as
// a harness does; without, it speaks on Stdin and Stdout.
func Play(ctx context.Context, cfg HarnessConfig) error {
	if cfg.URL != "" || cfg.Lifecycle != "persistent" || len(cfg.WaitFor) > 0 {
		return playLink(ctx, cfg)
	}
	in, out := cfg.Stdin, cfg.Stdout
	var backend *exec.Cmd
	if len(cfg.Argv) > 0 {
		backend = exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
		backend.Stderr = cfg.Say
		w, err := backend.StdinPipe()
		if err != nil {
			return err
		}
		r, err := backend.StdoutPipe()
		if err != nil {
			return err
		}
		if err := backend.Start(); err != nil {
			return fmt.Errorf("example-harness: cannot start the backend: %v", err)
		}
		in, out = r, w
	}
	h := &exampleHarness{snapshot: cfg.Snapshot, timeout: cfg.Timeout, out: out, say: cfg.Say, lines: make(chan []byte, 16)}
	go h.read(in)
	err := h.play(Session(time.Now()))
	if c, ok := out.(io.Closer); ok {
		c.Close() // EOF for the backend: the session is over
	}
	if backend != nil {
		if werr := backend.Wait(); werr != nil && err == nil {
			printable.Fprintf(cfg.Say, "harness: the backend ended with %v\n", werr)
		}
	}
	return err
}

type exampleHarness struct {
	snapshot string
	timeout  time.Duration
	out      io.Writer
	say      io.Writer
	lines    chan []byte // lines from the backend; closed at its EOF
}

func (h *exampleHarness) read(r io.Reader) {
	defer close(h.lines)
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			h.lines <- line
		}
		if err != nil {
			return
		}
	}
}

func (h *exampleHarness) play(steps []Step) error {
	for i, st := range steps {
		params := map[string]any{"protocolVersion": h.snapshot}
		msg := map[string]any{"jsonrpc": "2.0", "method": st.Method, "params": params}
		var id string
		switch st.Method {
		case "hooks/capabilities":
			id = "discovery"
		case "hooks/intercept":
			id = st.Event["id"].(string) // AHP-CORE-004: the JSON-RPC id is the event id
			params["event"] = st.Event
			params["capabilities"] = map[string]any{"effects": []string{"deny"}}
		case "hooks/observe":
			params["event"] = st.Event
		}
		if id != "" {
			msg["id"] = id
		}
		b, _ := json.Marshal(msg)
		if _, err := h.out.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("harness: sending step %d: %w", i+1, err)
		}
		if id == "" {
			fmt.Fprintf(h.say, "harness: %-46s → sent, no answer expected\n", st.Say)
			continue
		}
		printable.Fprintf(h.say, "harness: %-46s → %s\n", st.Say, h.await(id))
	}
	return nil
}

// await reads the backend's lines until the response to id, and says what
// it means in the AHP Inspector's words (no effect is not "allow").
func (h *exampleHarness) await(id string) string {
	deadline := time.After(h.timeout)
	for {
		select {
		case <-deadline:
			return "operational_failure: no response before the deadline"
		case line, ok := <-h.lines:
			if !ok {
				return "operational_failure: the backend closed stdout"
			}
			var resp exampleResponse
			if err := json.Unmarshal(line, &resp); err != nil {
				printable.Fprintf(h.say, "harness: (ignoring a line from the backend that is not JSON: %q)\n", strings.TrimSpace(string(line)))
				continue
			}
			if resp.ID != id {
				continue
			}
			return resp.describe(h.snapshot)
		}
	}
}

// exampleResponse is what the example harness reads of a response.
type exampleResponse struct {
	ID     string `json:"id"`
	Result *struct {
		ProtocolVersion string           `json:"protocolVersion"`
		Effects         []map[string]any `json:"effects"`
		Manifest        map[string]any   `json:"manifest"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// describe says what a response means to the harness.
func (r *exampleResponse) describe(snapshot string) string {
	switch {
	case r.Error != nil:
		return fmt.Sprintf("operational_failure: JSON-RPC error %d %s", r.Error.Code, r.Error.Message)
	case r.Result == nil:
		return "operational_failure: a response without result"
	case r.Result.ProtocolVersion != snapshot:
		return fmt.Sprintf("operational_failure: protocolVersion %q is not %q", r.Result.ProtocolVersion, snapshot)
	case r.Result.Manifest != nil:
		return "manifest received"
	case len(r.Result.Effects) == 0:
		return "no_effect (the call proceeds; this is not an \"allow\")"
	}
	for _, e := range r.Result.Effects {
		if _, ok := e["type"].(string); !ok {
			// AHP rejects an invalid response whole: a deny beside an
			// invalid effect is no deny (--inject invalid-deny).
			return "operational_failure: invalid response: an effect without a string type (the whole response is rejected)"
		}
	}
	var names []string
	for _, e := range r.Result.Effects {
		t, _ := e["type"].(string)
		if t == "deny" {
			return fmt.Sprintf("explicit_deny: %v", e["reason"])
		}
		names = append(names, t)
	}
	return fmt.Sprintf("operational_failure: unadvertised effect %s (only deny was advertised)", strings.Join(names, ", "))
}
