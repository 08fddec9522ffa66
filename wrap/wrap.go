// Package wrap puts ahp-tap in the path of every backend of an AHP
// registration document, and takes it out again.
//
// Both directions edit the document's text in place: only the values that
// route traffic (a stdio transport's command and args, an HTTP transport's
// url) change, so every other byte, member order, unknown fields and
// formatting included, stays as it was. Unwrap(Wrap(doc)) is doc, byte for
// byte. A wrapped document carries everything Unwrap needs:
//
//   - a stdio backend runs as `ahp-tap stdio FLAGS -- CMD ARGS...`, with the
//     original command's JSON text after "--" and the original args after it;
//   - an HTTP backend's url points at a tap listener on loopback, with the
//     original url's JSON text, percent-encoded, in the fragment
//     `#ahp-tap-upstream=...`, followed by wrap's mark `&ahp-tap-mark=...`:
//     a digest of the entry's id, the tap's url and the original url's
//     text. HTTP clients never send a fragment, so the harness's requests
//     are unchanged apart from where they go. Unwrap (and Wrap's "already
//     wrapped") trust only a fragment whose mark matches the rest of the
//     entry and whose tap url has the original's path and query: a url
//     that merely carries an `#ahp-tap-upstream=` fragment is left alone.
package wrap

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// FragmentKey starts the fragment of a wrapped HTTP url.
const FragmentKey = "ahp-tap-upstream="

// MarkKey follows the original url in that fragment: wrap's mark.
const MarkKey = "&ahp-tap-mark="

// mark is wrap's mark of an HTTP entry: the first 128 bits of the SHA-256
// of the entry's id, the url the harness now posts to (the tap's, without
// the fragment) and the original url's JSON text. It cannot appear by
// accident, and it does not survive an edit of any of the three.
func mark(hook, local, rawInner string) string {
	sum := sha256.Sum256([]byte("ahp-tap wrap 1\x00" + hook + "\x00" + local + "\x00" + rawInner))
	return hex.EncodeToString(sum[:16])
}

// Options say where the wrapped backends send their findings.
type Options struct {
	// Tap is the ahp-tap executable the harness starts (an absolute path:
	// harnesses run commands without a shell and with a minimal PATH).
	Tap string
	// Registration is the path of the original registration, given to
	// every tap as --registration so it judges dispatch and deadlines.
	Registration string
	// Dir holds the logs, captures and state directories of the taps.
	Dir string
	// ListenHost and ListenBase place the HTTP tap listeners: the n-th
	// HTTP backend wrapped gets port ListenBase+n.
	ListenHost string
	ListenBase int
	// Conduct, when set, is given to every tap as --conduct: their links
	// feed one live conduct timeline (issue 23).
	Conduct string
}

// A Change says what happened to one backend entry.
type Change struct {
	Hook      string // the entry's id
	Transport string // "stdio", "http", or what the entry says
	// Action is "wrapped", "unwrapped", "already wrapped", "not wrapped"
	// or "skipped".
	Action string
	// Detail says why an entry was skipped, or where a wrapped one logs.
	Detail string
	// Command is the `ahp-tap http` command line that starts the listener
	// a wrapped HTTP entry now points at.
	Command []string
	// Listen is that listener's address.
	Listen string
	// Route is the same link as a --route of a multi-route `ahp-tap
	// http` (HTTPCommand).
	Route Route
}

// An edit replaces doc[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// Wrap returns doc with every stdio and HTTP backend routed through
// ahp-tap, and what it did to each entry. Entries already wrapped are left
// alone. doc must be a JSON object with a "hooks" array; it is not
// otherwise validated here (the caller checks BASE-5 first).
func Wrap(doc []byte, o Options) ([]byte, []Change, error) {
	root, err := parse(doc)
	if err != nil {
		return nil, nil, err
	}
	var (
		edits   []edit
		changes []Change
		port    = o.ListenBase
	)
	for i, h := range root.Get("hooks").Elems() {
		id, _ := h.Get("id").Text()
		tr := h.Get("transport")
		kind, _ := tr.Get("type").Text()
		c := Change{Hook: id, Transport: kind}
		if id == "" {
			c.Hook = "#" + strconv.Itoa(i)
		}
		var es []edit
		switch kind {
		case "stdio":
			es, c = wrapStdio(doc, tr, o, c)
		case "http":
			es, c = wrapHTTP(doc, tr, o, port, c)
			if c.Action == "wrapped" {
				port++
				if t, _ := h.Path("authentication", "type").Text(); t == "oauth" {
					// AHP-AUTH-001: OAuth discovery starts from the url the
					// harness posts to, now the tap's.
					c.Detail += "; OAuth: the harness now discovers the protected resource from the tap's url, and the tap forwards its 401 challenges unchanged"
				}
			}
		default:
			c.Action, c.Detail = "skipped", fmt.Sprintf("transport type %q is neither stdio nor http", kind)
		}
		edits = append(edits, es...)
		changes = append(changes, c)
	}
	out := apply(doc, edits)
	if _, err := parse(out); err != nil {
		return nil, nil, fmt.Errorf("wrap produced a document that does not parse (an ahp-tap bug): %v", err)
	}
	return out, changes, nil
}

// Unwrap reverses Wrap: every wrapped entry gets its original command and
// args, or url, back, exactly as they were written.
func Unwrap(doc []byte, tapPath string) ([]byte, []Change, error) {
	root, err := parse(doc)
	if err != nil {
		return nil, nil, err
	}
	var (
		edits   []edit
		changes []Change
	)
	for i, h := range root.Get("hooks").Elems() {
		id, _ := h.Get("id").Text()
		tr := h.Get("transport")
		kind, _ := tr.Get("type").Text()
		c := Change{Hook: id, Transport: kind, Action: "not wrapped"}
		if id == "" {
			c.Hook = "#" + strconv.Itoa(i)
		}
		var es []edit
		switch kind {
		case "stdio":
			if isWrappedStdio(tr, tapPath) {
				es, c.Action = unwrapStdio(doc, tr), "unwrapped"
			}
		case "http":
			switch raw, ok, frag := wrappedUpstream(tr, c.Hook); {
			case ok:
				u := tr.Get("url")
				es, c.Action = []edit{{u.Start + 1, u.End - 1, raw}}, "unwrapped"
			case frag:
				c.Action, c.Detail = "skipped", "its url carries an #"+FragmentKey+" fragment that ahp-tap wrap did not write (no valid mark): left as it is"
			}
		}
		edits = append(edits, es...)
		changes = append(changes, c)
	}
	out := apply(doc, edits)
	if _, err := parse(out); err != nil {
		return nil, nil, fmt.Errorf("unwrap produced a document that does not parse (was the wrapped entry edited by hand?): %v", err)
	}
	return out, changes, nil
}

func parse(doc []byte) (*tap.Value, error) {
	root, _, err := tap.ParseJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if !root.Get("hooks").Is(tap.Array) {
		return nil, fmt.Errorf("not a registration: no \"hooks\" array")
	}
	return root, nil
}

// apply makes non-overlapping edits to a copy of doc.
func apply(doc []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b bytes.Buffer
	b.Grow(len(doc) + 512)
	pos := 0
	for _, e := range edits {
		b.Write(doc[pos:e.start])
		b.WriteString(e.text)
		pos = e.end
	}
	b.Write(doc[pos:])
	return b.Bytes()
}

// safeName keeps a hook id usable as a file name.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func fileBase(dir, hook string) string {
	name := unsafeName.ReplaceAllString(hook, "_")
	if name == "" || name == "." || name == ".." {
		name = "hook"
	}
	return filepath.Join(dir, name)
}

// isTap reports whether command names an ahp-tap executable.
func isTap(command, tapPath string) bool {
	base := filepath.Base(command)
	return strings.HasPrefix(base, "ahp-tap") || (tapPath != "" && base == filepath.Base(tapPath))
}

// isWrappedStdio reports whether a stdio transport already runs its
// backend under `ahp-tap stdio ... -- CMD`.
func isWrappedStdio(tr *tap.Value, tapPath string) bool {
	cmd, _ := tr.Get("command").Text()
	args := tr.Get("args").Elems()
	if !isTap(cmd, tapPath) || len(args) < 3 {
		return false
	}
	if s, _ := args[0].Text(); s != "stdio" {
		return false
	}
	k := separator(args)
	return k > 0 && k+1 < len(args)
}

// separator returns the index of the first "--" in args, or -1.
func separator(args []*tap.Value) int {
	for i, a := range args {
		if s, ok := a.Text(); ok && s == "--" {
			return i
		}
	}
	return -1
}

func wrapStdio(doc []byte, tr *tap.Value, o Options, c Change) ([]edit, Change) {
	cmd := tr.Get("command")
	args := tr.Get("args")
	switch {
	case isWrappedStdio(tr, o.Tap):
		c.Action, c.Detail = "already wrapped", "its command is already `ahp-tap stdio ... --`"
		return nil, c
	case !cmd.Is(tap.String) || cmd.Str == "":
		c.Action, c.Detail = "skipped", "no command string"
		return nil, c
	case args != nil && !allStrings(args):
		c.Action, c.Detail = "skipped", "args is not an array of strings"
		return nil, c
	}
	base := fileBase(o.Dir, c.Hook)
	flags := []string{"stdio", "--registration", o.Registration, "--hook", c.Hook,
		"--log", base + ".violations.log", "--capture", base + ".capture"}
	c.Detail = "findings in " + base + ".violations.log, traffic in " + base + ".capture"
	if o.Conduct != "" {
		flags = append(flags, "--conduct", o.Conduct)
		c.Detail += ", conduct in " + o.Conduct
	}
	if lc, _ := tr.Get("lifecycle").Text(); lc == "per_event" {
		// Retries are judged across processes (BASE-6) through shared state.
		flags = append(flags, "--state", base+".state")
		c.Detail += ", per-event state in " + base + ".state"
	}
	elems := make([]string, 0, len(flags)+2)
	for _, f := range flags {
		elems = append(elems, quote(f))
	}
	elems = append(elems, quote("--"), string(doc[cmd.Start:cmd.End]))

	es := []edit{{cmd.Start, cmd.End, quote(o.Tap)}}
	switch {
	case args == nil:
		// No args member: add one right after the command, in the one
		// layout Unwrap reads as "there was none" (see absentArgs).
		es = append(es, edit{cmd.End, cmd.End, `, "args": [` + strings.Join(elems, ", ") + "]"})
	case len(args.Arr) == 0:
		// `[W]`: the new elements go before "]", separated like W.
		ws := string(doc[args.Start+1 : args.End-1])
		es = append(es, edit{args.End - 1, args.End - 1, strings.Join(elems, ","+ws)})
	default:
		// In front of the first original element, keeping the text
		// between "[" and it, and every original element as written.
		sep := "," + elementSpace(doc, args)
		es = append(es, edit{args.Arr[0].Start, args.Arr[0].Start, strings.Join(elems, sep) + sep})
	}
	c.Action = "wrapped"
	return es, c
}

// elementSpace is the white space the array puts before an element: after
// "[" when there is some, else after the first comma, else none.
func elementSpace(doc []byte, args *tap.Value) string {
	if ws := doc[args.Start+1 : args.Arr[0].Start]; len(ws) > 0 {
		return string(ws)
	}
	if len(args.Arr) > 1 {
		between := doc[args.Arr[0].End:args.Arr[1].Start] // ws "," ws
		if i := bytes.IndexByte(between, ','); i >= 0 {
			return string(between[i+1:])
		}
	}
	return ""
}

func unwrapStdio(doc []byte, tr *tap.Value) []edit {
	cmd := tr.Get("command")
	args := tr.Get("args")
	a := args.Arr
	k := separator(a)
	orig := a[k+1]
	es := []edit{{cmd.Start, cmd.End, string(doc[orig.Start:orig.End])}}
	switch {
	case len(a) > k+2:
		es = append(es, edit{a[0].Start, a[k+2].Start, ""})
	case absentArgs(doc, cmd, args):
		es = append(es, edit{cmd.End, args.End, ""})
	default:
		es = append(es, edit{a[0].Start, orig.End, ""})
	}
	return es
}

// absentArgs reports whether args is the member Wrap added to a transport
// that had none: right after the command, separated by `, "args": `, with
// its elements separated by ", " and nothing after "[". Wrap writes an
// existing empty array differently (no space after the commas).
func absentArgs(doc []byte, cmd, args *tap.Value) bool {
	if args.Start < cmd.End || string(doc[cmd.End:args.Start]) != `, "args": ` {
		return false
	}
	a := args.Arr
	return a[0].Start == args.Start+1 && string(doc[a[0].End:a[1].Start]) == ", "
}

func allStrings(v *tap.Value) bool {
	if !v.Is(tap.Array) {
		return false
	}
	for _, e := range v.Arr {
		if !e.Is(tap.String) {
			return false
		}
	}
	return true
}

// wrappedUpstream returns the original url text of an HTTP transport
// wrapped by Wrap, and false when it is not wrapped. hasFragment says the
// url carries an `#ahp-tap-upstream=` fragment at all (trusted or not).
//
// Only what Wrap wrote is trusted: the fragment's mark must match the
// entry's id, the url before the fragment and the original url's text, and
// the original must be an absolute http(s) URL whose path and query are
// the ones the harness posts to. Anything else (a forged or hand-edited
// fragment, one that arrived with a third party's registration) is not
// wrapped: Unwrap leaves it alone and Wrap does not call it wrapped.
func wrappedUpstream(tr *tap.Value, hook string) (raw string, ok, hasFragment bool) {
	u, isText := tr.Get("url").Text()
	if !isText {
		return "", false, false
	}
	i := strings.Index(u, "#"+FragmentKey)
	if i < 0 {
		return "", false, false
	}
	local, frag := u[:i], u[i+1+len(FragmentKey):]
	enc, sum, found := strings.Cut(frag, MarkKey)
	if !found {
		return "", false, true
	}
	raw, err := url.QueryUnescape(enc)
	if err != nil || subtle.ConstantTimeCompare([]byte(sum), []byte(mark(hook, local, raw))) != 1 {
		return "", false, true
	}
	inner, _, err := tap.ParseJSON([]byte(`"` + raw + `"`))
	if err != nil {
		return "", false, true
	}
	innerText, _ := inner.Text()
	orig, err1 := url.Parse(innerText)
	lu, err2 := url.Parse(local)
	if err1 != nil || err2 != nil || (orig.Scheme != "http" && orig.Scheme != "https") || orig.Host == "" ||
		lu.EscapedPath() != orig.EscapedPath() || lu.RawQuery != orig.RawQuery {
		return "", false, true
	}
	return raw, true, true
}

func wrapHTTP(doc []byte, tr *tap.Value, o Options, port int, c Change) ([]edit, Change) {
	uv := tr.Get("url")
	switch _, ok, frag := wrappedUpstream(tr, c.Hook); {
	case ok:
		c.Action, c.Detail = "already wrapped", "its url already points at an ahp-tap listener"
		return nil, c
	case frag:
		c.Action, c.Detail = "skipped", "its url carries an #"+FragmentKey+" fragment that ahp-tap wrap did not write (no valid mark): fix the url by hand"
		return nil, c
	}
	if !uv.Is(tap.String) {
		c.Action, c.Detail = "skipped", "no url string"
		return nil, c
	}
	u, err := url.Parse(uv.Str)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		c.Action, c.Detail = "skipped", fmt.Sprintf("url %q is not an absolute http(s) URL", uv.Str)
		return nil, c
	case u.User != nil:
		c.Action, c.Detail = "skipped", "the url carries credentials; the tap refuses such an upstream"
		return nil, c
	case port <= 0 || port > 65535:
		c.Action, c.Detail = "skipped", fmt.Sprintf("no listener port left (port %d)", port)
		return nil, c
	}
	listen := netJoin(o.ListenHost, port)
	upstream := u.Scheme + "://" + u.Host
	local := "http://" + listen + u.EscapedPath()
	if u.RawQuery != "" {
		local += "?" + u.RawQuery
	}
	rawInner := string(doc[uv.Start+1 : uv.End-1])
	local += "#" + FragmentKey + url.QueryEscape(rawInner) + MarkKey + mark(c.Hook, local, rawInner)
	base := fileBase(o.Dir, c.Hook)
	c.Command = []string{o.Tap, "http", "--listen", listen, "--upstream", upstream,
		"--registration", o.Registration, "--hook", c.Hook,
		"--log", base + ".violations.log", "--capture", base + ".capture"}
	if o.Conduct != "" {
		c.Command = append(c.Command, "--conduct", o.Conduct)
	}
	c.Listen = listen
	c.Route = Route{Hook: c.Hook, Listen: listen, Upstream: upstream, Log: base + ".violations.log", Capture: base + ".capture"}
	c.Action = "wrapped"
	c.Detail = "findings in " + base + ".violations.log, traffic in " + base + ".capture"
	return []edit{{uv.Start, uv.End, quote(local)}}, c
}

func netJoin(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// quote writes s as a JSON string without HTML escaping.
func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ShellQuote renders argv as one line a POSIX shell reads back as argv.
func ShellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
