package main

import (
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
