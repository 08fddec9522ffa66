package linkconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func TestRedactRegistration(t *testing.T) {
	t.Parallel()
	reg, _, err := tap.ParseJSON([]byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.a",
		"transport":{"type":"http","url":"https://p.example/h"},
		"authentication":{"bearer":{"tokenEnv":"AHP_TOKEN","token":"sekrit-123"}},
		"subscriptions":[{"events":["tool.before"],"mode":"observe","content":{"default":"body"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := string(redactRegistration(reg))
	if strings.Contains(got, "sekrit-123") {
		t.Errorf("redactRegistration kept the literal token: %s", got)
	}
	for _, keep := range []string{`"tokenEnv":"AHP_TOKEN"`, tap.RedactedCredential, `"com.example.a"`} {
		if !strings.Contains(got, keep) {
			t.Errorf("redactRegistration = %s, want it to contain %s", got, keep)
		}
	}
	// The engine's own tree is untouched.
	if tok, _ := reg.Path("hooks").Elems()[0].Path("authentication", "bearer", "token").Text(); tok != "sekrit-123" {
		t.Errorf("the original registration tree was changed: token = %q", tok)
	}
}

func TestLoadRefusesBadRegistrations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := write("two.json", `{"protocolVersion":"draft","hooks":[{"id":"a"},{"id":"b"}]}`)
	one := write("one.json", `{"protocolVersion":"draft","hooks":[{"id":"a"}]}`)
	arr := write("arr.json", `[]`)
	for _, c := range []struct {
		f    Files
		want string
	}{
		{Files{Hook: "a"}, "--hook needs --registration"},
		{Files{Timeout: -1}, "--timeout must not be negative"},
		{Files{Registration: arr}, "must be a JSON object with protocolVersion and hooks, not an array"},
		{Files{Registration: two}, "has 2 hooks (a, b): choose one with --hook ID"},
		{Files{Registration: one, Hook: "z"}, `has no hook with id "z"`},
	} {
		_, err := Load(c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%+v) = %v, want %q", c.f, err, c.want)
		}
	}
	l, err := Load(Files{Registration: one, Snapshot: tap.DefaultSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.HookID != "a" || l.Registration != one || len(l.RegDoc) == 0 {
		t.Errorf("Load(one hook) = hook %q, registration %q, doc %d bytes; want its only hook", l.Config.HookID, l.Registration, len(l.RegDoc))
	}
}
