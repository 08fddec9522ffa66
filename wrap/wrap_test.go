package wrap

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sharedAHP is the upstream reference data, beside the repository.
const sharedAHP = "../../shared/ahp"

var opts = Options{
	Tap: "/opt/ahp-tap/bin/ahp-tap", Registration: "/etc/ahp/hooks.json", Dir: "/var/log/ahp-tap",
	ListenHost: "127.0.0.1", ListenBase: 8787,
}

// registrationFixtures returns every registration fixture the upstream
// manifest lists, by id.
func registrationFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedAHP, "fixtures/draft/manifest.json"))
	if err != nil {
		t.Skipf("no shared AHP corpus: %v", err)
	}
	var m struct {
		Cases []struct{ ID, Path, Binding string }
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, c := range m.Cases {
		if c.Binding != "registration-json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(sharedAHP, c.Path))
		if err != nil {
			t.Fatal(err)
		}
		out[c.ID] = b
	}
	if len(out) == 0 {
		t.Fatal("the manifest lists no registration fixture")
	}
	return out
}

func roundTrip(t *testing.T, name string, doc []byte) []byte {
	t.Helper()
	w, _, err := Wrap(doc, opts)
	if err != nil {
		t.Fatalf("%s: Wrap: %v", name, err)
	}
	back, _, err := Unwrap(w, opts.Tap)
	if err != nil {
		t.Fatalf("%s: Unwrap: %v\n%s", name, err, w)
	}
	if string(back) != string(doc) {
		t.Errorf("%s: Unwrap(Wrap(doc)) differs from doc\nwrapped:\n%s\ngot:\n%s\nwant:\n%s", name, w, back, doc)
	}
	return w
}

func TestRoundTripEveryRegistrationFixture(t *testing.T) {
	for id, doc := range registrationFixtures(t) {
		w := roundTrip(t, id, doc)
		var before, after struct{ Hooks []json.RawMessage }
		json.Unmarshal(doc, &before)
		json.Unmarshal(w, &after)
		if len(before.Hooks) > 0 && string(w) == string(doc) {
			t.Errorf("%s: Wrap changed nothing", id)
		}
	}
}

// transport decodes hooks[i].transport of doc.
func transport(t *testing.T, doc []byte, i int) map[string]any {
	t.Helper()
	var d struct {
		Hooks []struct{ Transport map[string]any }
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	return d.Hooks[i].Transport
}

func strs(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

func TestWrapStdioRunsTheOriginalAfterTheSeparator(t *testing.T) {
	cases := map[string]struct {
		transport string
		wantArgs  []string // the original args, after CMD
	}{
		"absent args":      {`{"type": "stdio", "command": "/usr/bin/review", "lifecycle": "persistent"}`, nil},
		"empty args":       {`{"type":"stdio","command":"review","args":[],"lifecycle":"persistent"}`, nil},
		"spaced empty":     {`{"type":"stdio","command":"review","args":[ ],"lifecycle":"persistent"}`, nil},
		"pretty empty":     {"{\"type\":\"stdio\",\"command\":\"review\",\"args\":[\n    ],\"lifecycle\":\"persistent\"}", nil},
		"compact one":      {`{"type":"stdio","command":"review","args":["serve"],"lifecycle":"persistent"}`, []string{"serve"}},
		"spaced two":       {`{"type":"stdio","command":"review","args":["serve", "--fast"],"lifecycle":"persistent"}`, []string{"serve", "--fast"}},
		"args first":       {`{"type":"stdio","args":["a"],"command":"review","lifecycle":"persistent"}`, []string{"a"}},
		"escaped command":  {`{"type":"stdio","command":"\/usr\/bin\/r\u00e9view","args":["\"q\""],"lifecycle":"persistent"}`, []string{`"q"`}},
		"unknown fields":   {`{"x-vendor":{"k":[1,2]},"type":"stdio","command":"review","lifecycle":"persistent","cwd":"/w"}`, nil},
		"absent then more": {`{"type": "stdio", "command": "review", "lifecycle": "persistent", "env": {}}`, nil},
	}
	for name, c := range cases {
		doc := []byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.r","transport":` + c.transport + `,"subscriptions":[]}]}` + "\n")
		w := roundTrip(t, name, doc)
		tr := transport(t, w, 0)
		orig := transport(t, doc, 0)
		if tr["command"] != opts.Tap {
			t.Errorf("%s: command = %v, want %s", name, tr["command"], opts.Tap)
		}
		args := strs(tr["args"])
		k := slices.Index(args, "--")
		if args[0] != "stdio" || k < 0 || args[k+1] != orig["command"] || !slices.Equal(args[k+2:], c.wantArgs) {
			t.Errorf("%s: args = %q, want stdio ... -- %v %q", name, args, orig["command"], c.wantArgs)
		}
		for _, f := range []string{"--registration", "--hook", "--log", "--capture"} {
			if !slices.Contains(args[:k], f) {
				t.Errorf("%s: args %q lack %s", name, args, f)
			}
		}
		if j := slices.Index(args, "--hook"); args[j+1] != "com.example.r" {
			t.Errorf("%s: --hook %q", name, args[j+1])
		}
		if slices.Contains(args[:k], "--state") {
			t.Errorf("%s: a persistent backend got --state: %q", name, args)
		}
		for key, v := range orig {
			if key != "command" && key != "args" {
				if got, _ := json.Marshal(tr[key]); string(got) != mustJSON(v) {
					t.Errorf("%s: %s = %s, want %s", name, key, got, mustJSON(v))
				}
			}
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestWrapPerEventSharesState(t *testing.T) {
	doc := []byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.o","transport":{"type":"stdio","command":"o","lifecycle":"per_event"}}]}`)
	w := roundTrip(t, "per_event", doc)
	args := strs(transport(t, w, 0)["args"])
	if i := slices.Index(args, "--state"); i < 0 || args[i+1] != "/var/log/ahp-tap/com.example.o.state" {
		t.Errorf("per_event args = %q, want --state /var/log/ahp-tap/com.example.o.state", args)
	}
}

func TestWrapHTTPPointsAtAListener(t *testing.T) {
	doc := []byte(`{"protocolVersion":"draft","hooks":[
 {"id":"a.b","transport":{"type":"http","url":"https://policy.example.com/agent-hooks?tenant=7"}},
 {"id":"c.d","transport":{"url":"http:\/\/127.0.0.1:9000\/h\u00e9","type":"http"},"authentication":{"type":"bearer","tokenEnv":"T"}}]}`)
	w := roundTrip(t, "http", doc)
	_, changes, _ := Wrap(doc, opts)
	want := []struct{ url, listen, upstream string }{
		{"http://127.0.0.1:8787/agent-hooks?tenant=7#", "127.0.0.1:8787", "https://policy.example.com"},
		{"http://127.0.0.1:8788/h%C3%A9#", "127.0.0.1:8788", "http://127.0.0.1:9000"},
	}
	for i, wt := range want {
		u := transport(t, w, i)["url"].(string)
		if !strings.HasPrefix(u, wt.url+FragmentKey) {
			t.Errorf("hook %d: url = %q, want %s%s...", i, u, wt.url, FragmentKey)
		}
		c := changes[i]
		if c.Action != "wrapped" || c.Listen != wt.listen {
			t.Errorf("hook %d: change = %+v, want wrapped at %s", i, c, wt.listen)
		}
		if j := slices.Index(c.Command, "--upstream"); j < 0 || c.Command[j+1] != wt.upstream {
			t.Errorf("hook %d: command %q, want --upstream %s", i, c.Command, wt.upstream)
		}
		if c.Command[0] != opts.Tap || c.Command[1] != "http" || !slices.Contains(c.Command, "--log") {
			t.Errorf("hook %d: command %q", i, c.Command)
		}
	}
}

func TestWrapLeavesWrappedEntriesAlone(t *testing.T) {
	for id, doc := range registrationFixtures(t) {
		w, _, err := Wrap(doc, opts)
		if err != nil {
			t.Fatal(err)
		}
		w2, changes, err := Wrap(w, opts)
		if err != nil {
			t.Fatal(err)
		}
		if string(w2) != string(w) {
			t.Errorf("%s: wrapping twice changed the document\n%s", id, w2)
		}
		for _, c := range changes {
			if c.Action != "already wrapped" {
				t.Errorf("%s: second wrap of %s: %s, want already wrapped", id, c.Hook, c.Action)
			}
		}
	}
}

func TestUnwrapLeavesPlainEntriesAlone(t *testing.T) {
	doc := []byte(`{"hooks":[{"id":"x.y","transport":{"type":"stdio","command":"mytool","args":["stdio","--","z"]}},{"id":"h.i","transport":{"type":"http","url":"https://e.com/#frag"}}]}`)
	out, changes, err := Unwrap(doc, opts.Tap)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(doc) {
		t.Errorf("Unwrap changed an unwrapped document:\n%s", out)
	}
	for _, c := range changes {
		if c.Action != "not wrapped" {
			t.Errorf("%s: %s, want not wrapped", c.Hook, c.Action)
		}
	}
}

func TestWrapSkipsWhatItCannotRoute(t *testing.T) {
	doc := []byte(`{"hooks":[{"id":"a.a","transport":{"type":"websocket","url":"wss://x"}},{"id":"b.b","transport":{"type":"http","url":"https://u:p@e.com/"}},{"id":"c.c","transport":{"type":"stdio","command":"x","args":[1]}}]}`)
	out, changes, err := Wrap(doc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(doc) {
		t.Errorf("Wrap changed entries it skipped:\n%s", out)
	}
	for _, c := range changes {
		if c.Action != "skipped" || c.Detail == "" {
			t.Errorf("%s: %+v, want skipped with a reason", c.Hook, c)
		}
	}
}

func TestShellQuote(t *testing.T) {
	got := ShellQuote([]string{"/bin/ahp-tap", "--log", "/a b/c's", "x=1"})
	if want := `/bin/ahp-tap --log '/a b/c'\''s' x=1`; got != want {
		t.Errorf("ShellQuote = %s, want %s", got, want)
	}
}

// Only what Wrap wrote unwraps: a fragment without wrap's mark, with a
// mark of another entry, or whose tap url lost the original's path, is
// left alone by Unwrap and not "already wrapped" for Wrap.
func TestUnwrapTrustsOnlyTheMark(t *testing.T) {
	orig := []byte(`{"protocolVersion":"draft","hooks":[{"id":"a.b","transport":{"type":"http","url":"https://policy.example.com/h?t=1"}}]}`)
	w, _, err := Wrap(orig, opts)
	if err != nil {
		t.Fatal(err)
	}
	if back, changes, _ := Unwrap(w, opts.Tap); string(back) != string(orig) || changes[0].Action != "unwrapped" {
		t.Fatalf("Unwrap(Wrap(doc)) = %s (%+v)", back, changes)
	}
	forged := map[string]string{
		"no mark":            strings.Replace(string(orig), `?t=1"`, `?t=1#`+FragmentKey+`%22https%3A%2F%2Fevil%2Fh%22"`, 1),
		"another entry's id": strings.Replace(string(w), `"id":"a.b"`, `"id":"x.y"`, 1),
		"original edited":    strings.Replace(string(w), "policy.example.com", "evil.example.com", 1),
		"path changed":       strings.Replace(string(w), "8787/h?t=1", "8787/other?t=1", 1),
		"mark edited":        strings.Replace(string(w), MarkKey, MarkKey+"0", 1),
	}
	for name, doc := range forged {
		if doc == string(w) || doc == string(orig) {
			t.Fatalf("%s: the forgery changed nothing", name)
		}
		back, changes, err := Unwrap([]byte(doc), opts.Tap)
		if err != nil || string(back) != doc || changes[0].Action != "skipped" || !strings.Contains(changes[0].Detail, "did not write") {
			t.Errorf("%s: Unwrap = %s, %+v, %v; want the document unchanged and the entry skipped", name, back, changes, err)
		}
		if _, changes, _ := Wrap([]byte(doc), opts); changes[0].Action == "already wrapped" {
			t.Errorf("%s: Wrap says already wrapped", name)
		}
	}
}

// Two HTTP entries: one `ahp-tap http` command, one --route per entry,
// each route reading back as the entry's listener, upstream, log and
// capture; one HTTP entry keeps its own command.
func TestHTTPCommandRoutesEveryHTTPEntry(t *testing.T) {
	doc := []byte(`{"protocolVersion":"draft","hooks":[
 {"id":"a.b","transport":{"type":"http","url":"https://policy.example.com/agent-hooks"}},
 {"id":"s","transport":{"type":"stdio","command":"x"}},
 {"id":"c.d","transport":{"type":"http","url":"http://127.0.0.1:9000/h"}}]}`)
	o := opts
	o.Conduct = "/var/log/ahp-tap/conduct"
	_, changes, err := Wrap(doc, o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := HTTPCommand(o, changes)
	want := []string{o.Tap, "http", "--registration", o.Registration, "--conduct", o.Conduct, "--route",
		"hook=a.b,listen=127.0.0.1:8787,upstream=https://policy.example.com,log=/var/log/ahp-tap/a.b.violations.log,capture=/var/log/ahp-tap/a.b.capture",
		"--route", "hook=c.d,listen=127.0.0.1:8788,upstream=http://127.0.0.1:9000,log=/var/log/ahp-tap/c.d.violations.log,capture=/var/log/ahp-tap/c.d.capture"}
	if !slices.Equal(cmd, want) {
		t.Errorf("HTTPCommand = %q\nwant %q", cmd, want)
	}
	for _, i := range []int{0, 2} {
		r, err := ParseRoute(changes[i].Route.String())
		if err != nil || r != changes[i].Route {
			t.Errorf("ParseRoute(%q) = %+v, %v", changes[i].Route.String(), r, err)
		}
	}
	_, one, _ := Wrap([]byte(`{"hooks":[{"id":"a","transport":{"type":"http","url":"http://h/p"}}]}`), o)
	if c := HTTPCommand(o, one); !slices.Equal(c, one[0].Command) || slices.Contains(c, "--route") {
		t.Errorf("one HTTP entry: %q, want its own command %q", c, one[0].Command)
	}
	if c := HTTPCommand(o, nil); c != nil {
		t.Errorf("no HTTP entry: %q", c)
	}
}

func TestParseRoute(t *testing.T) {
	r, err := ParseRoute("listen=127.0.0.1:1,upstream=http://h/a,b?x=1,y=2,capture=/tmp/a,b.capture,hook=h")
	want := Route{Hook: "h", Listen: "127.0.0.1:1", Upstream: "http://h/a,b?x=1,y=2", Capture: "/tmp/a,b.capture"}
	if err != nil || r != want {
		t.Errorf("commas inside values: %+v, %v; want %+v", r, err, want)
	}
	for _, bad := range []string{"", "upstream=http://h", "listen=:1", "path=/x,listen=:1,upstream=http://h", "listen=:1,listen=:2,upstream=http://h"} {
		if _, err := ParseRoute(bad); err == nil {
			t.Errorf("ParseRoute(%q): no error", bad)
		}
	}
}
