package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// singleDash matches a long flag listed with one dash (one-letter flags
// such as -f keep one).
var singleDash = regexp.MustCompile(`\n\s+-[a-z][a-z]`)

// runTapIn runs the built binary in dir.
func runTapIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tapBinary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// Every command answers -h and --help before acting, and 'help CMD' shows
// CMD's help (issue 15 item 8). Flags are shown with two dashes, as the
// docs write them (item 10).
func TestEveryCommandHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmds := []string{"check", "replay", "diff", "view", "stdio", "http", "demo", "rules", "tail", "example-backend", "example-harness", "ca", "version", "wrap", "unwrap"}
	for _, c := range cmds {
		for _, args := range [][]string{{c, "-h"}, {c, "--help"}, {"help", c}} {
			r := runTapIn(t, dir, args...)
			if r.code != 0 || !strings.Contains(r.stderr, "usage: ahp-tap "+c) {
				t.Errorf("ahp-tap %q: exit %d, stderr %q; want 0 and %s's usage", args, r.code, r.stderr, c)
			}
			if singleDash.MatchString(r.stderr) {
				t.Errorf("ahp-tap %q: a flag is shown with one dash:\n%s", args, r.stderr)
			}
		}
	}
	// Help after the arguments too: nothing is created.
	for _, args := range [][]string{{"ca", "init", "-h"}, {"ca", "init", "--help"}, {"check", "x.json", "-h"}} {
		if r := runTapIn(t, dir, args...); r.code != 0 {
			t.Errorf("ahp-tap %q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("help created %v", ents)
	}
	// After --, -h is the backend's.
	if r := runTapIn(t, dir, "stdio", "--", "/bin/echo", "-h"); r.code != 0 || r.stdout != "-h\n" {
		t.Errorf("stdio -- echo -h: exit %d, stdout %q", r.code, r.stdout)
	}
}

// Values that parse but make no sense are exit 2 with a one-line reason
// (issue 15 item 9).
func TestBadValuesRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	deep := filepath.Join(dir, "no", "such", "st")
	for _, args := range [][]string{
		{"stdio", "--audit-queue", "0", "--", "/bin/true"},
		{"stdio", "--audit-queue", "-1", "--", "/bin/true"},
		{"stdio", "--max-audit-line", "-5", "--", "/bin/true"},
		{"stdio", "--state", deep, "--", "/bin/true"},
		{"demo", "--mode", "bogus"},
		{"check", "--edit-context", `{"event":"tool.after","curent":{}}`, "x.json"},
	} {
		r := runTapIn(t, dir, args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
			t.Errorf("ahp-tap %q: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Errorf("--state created %s", filepath.Join(dir, "no"))
	}
}

// The offline commands share one flag set, and so do the live taps; both
// live taps print the same summary under the same rule (issue 15 item 10).
func TestCommonFlags(t *testing.T) {
	t.Parallel()
	common := map[string][]string{
		"check":  {"--format", "--fail-on", "--log", "--allow-empty", "--registration", "--hook", "--protocol-version", "--timeout", "--spec"},
		"replay": {"--format", "--fail-on", "--log", "--allow-empty", "--registration", "--hook", "--protocol-version", "--timeout", "--spec"},
		"stdio":  {"--log", "--capture", "--console", "--summary", "--registration", "--hook", "--protocol-version", "--timeout", "--spec"},
		"http":   {"--log", "--capture", "--console", "--summary", "--registration", "--hook", "--protocol-version", "--timeout", "--spec"},
	}
	for cmd, flags := range common {
		r := runTap(t, "", cmd, "--help")
		for _, f := range flags {
			if !strings.Contains(r.stderr, "\n  "+f+" ") && !strings.Contains(r.stderr, "\n  "+f+"\n") {
				t.Errorf("ahp-tap %s has no %s", cmd, f)
			}
		}
	}
}

// version names the build: ahp-tap's version and the Go it was built with
// (and the commit, when built in a git checkout with VCS stamping on).
func TestVersionStamp(t *testing.T) {
	t.Parallel()
	r := runTap(t, "", "version")
	if r.code != 0 || !regexp.MustCompile(`^ahp-tap \S+( \(commit [0-9a-f]{12}(, modified)?\))? go1\.\d+`).MatchString(r.stdout) {
		t.Errorf("version: exit %d, %q", r.code, r.stdout)
	}
}
