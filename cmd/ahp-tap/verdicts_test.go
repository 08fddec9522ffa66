package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 22: a registration with duplicate member names has no one meaning
// (a subscription fail-closed to one parser, fail-open to another), so
// --registration refuses it (exit 2, one line naming BASE-5 and the
// member), and `check` of the file reports BASE-5. The same registration
// without the duplicate is used.
func TestRegistrationDuplicateKeysRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const good = `{"protocolVersion":"draft","hooks":[{"id":"com.example.review","transport":{"type":"stdio","command":"/bin/true","lifecycle":"persistent"},` +
		`"subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":500,"failurePolicy":"fail-closed","content":{"default":"metadata"}}]}]}`
	bad := strings.Replace(good, `"failurePolicy":"fail-closed"`, `"failurePolicy":"fail-closed","failurePolicy":"fail-open"`, 1)
	goodPath, badPath := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	for p, doc := range map[string]string{goodPath: good, badPath: bad} {
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := runTapIn(t, dir, "stdio", "--registration", badPath, "--", "/bin/true")
	if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 ||
		!strings.Contains(r.stderr, "BASE-5") || !strings.Contains(r.stderr, `"failurePolicy"`) || !strings.Contains(r.stderr, "/hooks/0/subscriptions/0/failurePolicy") {
		t.Errorf("stdio --registration (duplicate key): exit %d, stderr %q; want 2 and one line naming BASE-5 and the member", r.code, r.stderr)
	}
	if r := runTapIn(t, dir, "stdio", "--registration", goodPath, "--", "/bin/true"); r.code != 0 {
		t.Errorf("stdio --registration (valid): exit %d, stderr %q; want 0", r.code, r.stderr)
	}
	r = runTapIn(t, dir, "check", badPath)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "BASE-5") {
		t.Errorf("check (duplicate key): exit %d, stdout %q, stderr %q; want 1 with BASE-5", r.code, r.stdout, r.stderr)
	}
	if r := runTapIn(t, dir, "check", goodPath); r.code != 0 {
		t.Errorf("check (valid): exit %d, stdout %q; want 0", r.code, r.stdout)
	}
}
