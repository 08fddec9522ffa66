package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// A docCommand is one ahp-tap command line of a documented recipe, and
// the exit code its comment promises (-1: none).
type docCommand struct {
	line string
	exit int
}

// docRecipes returns the ahp-tap commands of each fenced block of a
// Markdown file, in order: the lines of sh blocks (backslash continuations
// joined), and the run: steps and script: items of YAML blocks (folded
// scalars joined). Lines that install or build ahp-tap are left out: the
// test puts the built binary on PATH.
func docRecipes(t *testing.T, path string) [][]docCommand {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]docCommand
	exitRE := regexp.MustCompile(`^\s*exit (\d)`)
	blocks := regexp.MustCompile("(?s)```(sh|yaml)\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	for _, blk := range blocks {
		var cmds []docCommand
		add := func(line, comment string) {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "ahp-tap ") {
				return
			}
			c := docCommand{line: line, exit: -1}
			if m := exitRE.FindStringSubmatch(comment); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			cmds = append(cmds, c)
		}
		lines := strings.Split(blk[2], "\n")
		if blk[1] == "sh" {
			cur := ""
			for _, l := range lines {
				if strings.HasSuffix(l, "\\") {
					cur += strings.TrimSuffix(l, "\\") + " "
					continue
				}
				l = cur + l
				cur = ""
				code, comment, _ := strings.Cut(l, " #")
				add(code, comment)
			}
		} else {
			for i := 0; i < len(lines); i++ {
				l := strings.TrimSpace(lines[i])
				l = strings.TrimPrefix(l, "- ")
				switch {
				case l == "run: >":
					indent := len(lines[i+1]) - len(strings.TrimLeft(lines[i+1], " "))
					var parts []string
					for i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) >= indent && strings.TrimSpace(lines[i+1]) != "" {
						i++
						parts = append(parts, strings.TrimSpace(lines[i]))
					}
					add(strings.Join(parts, " "), "")
				case strings.HasPrefix(l, "run: "):
					add(strings.TrimPrefix(l, "run: "), "")
				default:
					code, comment, _ := strings.Cut(l, " #")
					add(code, comment)
				}
			}
		}
		if len(cmds) > 0 {
			out = append(out, cmds)
		}
	}
	return out
}

// runDoc runs one documented command line with bash in dir, the built
// binary first on PATH.
func runDoc(t *testing.T, dir, line string) result {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(tapBinary)+string(os.PathListSeparator)+os.Getenv("PATH"), "GITHUB_STEP_SUMMARY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return r
}

// freshRepo is a new git repository that never ran ahp-tap.
func freshRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Skipf("git init: %v (%s)", err, out)
	}
	return dir
}

// TestCIDocsRecipesOnFreshRepo runs the ahp-tap commands of every CI
// recipe in docs/ci.md and README.md as written, in a new git repository
// with no baseline (issue 21 item 4): the recording is made, every report
// the replay names is written although .ahp-baseline.json does not exist
// yet, standard error says once how to create it, and the exit code is the
// documented one (1: the example backend's deliberate faults); commands
// whose comment promises an exit code give it.
func TestCIDocsRecipesOnFreshRepo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	recipes := append(docRecipes(t, "../../docs/ci.md"), docRecipes(t, "../../README.md")...)
	record := ""
	for _, r := range recipes {
		for _, c := range r {
			// The first: docs/ci.md's recording, made in the repository's
			// root (README's use cases name examples/, run by TestREADMEUseCases).
			if record == "" && strings.Contains(c.line, "example-harness") && strings.Contains(c.line, "--capture session.capture") {
				record = c.line
			}
		}
	}
	if record == "" {
		t.Fatal("docs/ci.md shows no command that records session.capture")
	}
	ran := 0
	for _, r := range recipes {
		if !strings.Contains(r[len(r)-1].line, "session.capture") || !strings.Contains(strings.Join(lines(r), "\n"), "replay") {
			continue // not a CI recipe over the recorded session
		}
		dir := freshRepo(t)
		if !strings.Contains(r[0].line, "--capture session.capture") {
			if res := runDoc(t, dir, record); res.code != 0 {
				t.Fatalf("%s: exit %d\n%s", record, res.code, res.stderr)
			}
		}
		for _, c := range r {
			res := runDoc(t, dir, c.line)
			ran++
			want := c.exit
			if want < 0 && strings.Contains(c.line, " replay ") {
				want = 1 // the example backend's faults, no baseline yet
			}
			if want < 0 {
				want = 0
			}
			if res.code != want {
				t.Errorf("%s: exit %d, want %d\n%s", c.line, res.code, want, res.stderr)
			}
			if strings.Contains(c.line, "--baseline .ahp-baseline.json") && c.exit < 0 {
				if n := strings.Count(res.stderr, "create it with --write-baseline .ahp-baseline.json"); n != 1 {
					t.Errorf("%s: stderr says %d times how to create the baseline, want once:\n%s", c.line, n, res.stderr)
				}
			}
			for _, m := range regexp.MustCompile(`--report [a-z]+=(\S+)`).FindAllStringSubmatch(c.line, -1) {
				if fi, err := os.Stat(filepath.Join(dir, m[1])); err != nil || fi.Size() == 0 {
					t.Errorf("%s: report %s not written: %v", c.line, m[1], err)
				}
			}
		}
	}
	if ran < 8 {
		t.Errorf("ran %d documented commands; the recipes were not found", ran)
	}
}

func lines(cs []docCommand) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.line)
	}
	return out
}

// TestCheckFailOnAsReplay checks that check honours --fail-on exactly as
// replay does (issue 21 item 1): never on errors exits 0, warn on
// warnings exits 1, the default error on warnings only exits 0.
func TestCheckFailOnAsReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// An error (BASE-2) and, in another file, a warning only (STDIO-1's
	// CRLF ending).
	errs := filepath.Join(dir, "errors.jsonl")
	os.WriteFile(errs, []byte(verdictRequest+"\n"+verdictAnswer+"\n"), 0o600)
	warns := filepath.Join(dir, "warnings.jsonl")
	os.WriteFile(warns, []byte(verdictRequest+"\n"+`{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[]}}`+"\r\n"), 0o600)
	for _, c := range []struct {
		failOn, input string
		want          int
	}{
		{"never", errs, 0},
		{"error", errs, 1},
		{"warn", warns, 1},
		{"error", warns, 0},
		{"", errs, 1},
		{"", warns, 0},
	} {
		for _, cmd := range []string{"check", "replay"} {
			args := []string{cmd}
			if c.failOn != "" {
				args = append(args, "--fail-on", c.failOn)
			}
			args = append(args, "--report", "junit="+filepath.Join(dir, "r.xml"), c.input)
			if r := runTap(t, "", args...); r.code != c.want {
				t.Errorf("ahp-tap %v: exit %d, want %d\n%s%s", args, r.code, c.want, r.stdout, r.stderr)
			}
		}
	}
}

// TestTextLocatesFindingsAsJUnit checks that the text report names each
// finding's place as FILE:LINE, the line JUnit, SARIF and the annotations
// give (issue 21 item 5), so editors and terminals can jump to it.
func TestTextLocatesFindingsAsJUnit(t *testing.T) {
	t.Parallel()
	junit := filepath.Join(t.TempDir(), "r.xml")
	r := runTap(t, "", "replay", "--fail-on", "never", "--report", "text", "--report", "junit="+junit, exampleCapture)
	b, _ := os.ReadFile(junit)
	places := func(re, s string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(s, -1) {
			out = append(out, m[1]+" #"+m[2])
		}
		sort.Strings(out)
		return out
	}
	text := places(`(?m)^`+regexp.QuoteMeta(exampleCapture)+`:(\d+): #(\d+) `, r.stdout)
	ju := places(regexp.QuoteMeta(exampleCapture)+`:(\d+): frame #(\d+) `, string(b))
	if len(text) == 0 || strings.Join(text, ",") != strings.Join(ju, ",") {
		t.Errorf("text locates findings at %v, JUnit at %v\n%s", text, ju, r.stdout)
	}
}

// TestCIRunsTheREADMETestCommand: .ci/run runs exactly the test command
// the README's "Try it" block shows (the whole suite, -tags e2e), and
// vets and staticchecks the same build, so that the end-to-end cases the
// quick loop leaves out are still built, checked and run in CI.
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^(go test [^#\n]*?)\s+# the whole test suite`).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README: no "go test ... # the whole test suite" line`)
	}
	want := string(m[1])
	var tests []string
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(l, "go test ") {
			tests = append(tests, l)
		}
	}
	if len(tests) != 1 || tests[0] != want {
		t.Errorf(".ci/run's test commands %q, want exactly the README's %q", tests, want)
	}
	if !strings.Contains(want, "-tags e2e") {
		t.Errorf("the README's test command %q leaves out the end-to-end cases (-tags e2e)", want)
	}
	for _, line := range []string{"go vet -tags e2e ./...", "GOOS=darwin go vet -tags e2e ./...", `"$bin/staticcheck" -tags e2e ./...`} {
		if !strings.Contains(string(ci), "\n"+line+"\n") {
			t.Errorf(".ci/run does not run %q", line)
		}
	}
}
