package ghaction

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

type action struct {
	Inputs map[string]struct {
		Required bool   `yaml:"required"`
		Default  string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

type step struct {
	ID    string            `yaml:"id"`
	Name  string            `yaml:"name"`
	Uses  string            `yaml:"uses"`
	If    string            `yaml:"if"`
	Shell string            `yaml:"shell"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
	Run   string            `yaml:"run"`
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func load(t *testing.T) action {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

var expr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// runner plays the parts of the Actions runner the action uses: inputs
// with their defaults, github.action_path, step outputs, GITHUB_PATH,
// GITHUB_OUTPUT and GITHUB_STEP_SUMMARY.
type runner struct {
	t         *testing.T
	a         action
	inputs    map[string]string
	outputs   map[string]map[string]string
	path      []string
	workspace string
	temp      string
	summary   string
}

func (r *runner) eval(s string) string {
	return expr.ReplaceAllStringFunc(s, func(m string) string {
		e := expr.FindStringSubmatch(m)[1]
		switch {
		case e == "github.action_path":
			return repoRoot(r.t)
		case strings.HasPrefix(e, "inputs."):
			return r.inputs[strings.TrimPrefix(e, "inputs.")]
		case strings.HasPrefix(e, "steps."):
			p := strings.Split(e, ".") // steps.ID.outputs.NAME
			if len(p) == 4 && p[2] == "outputs" {
				return r.outputs[p[1]][p[3]]
			}
		}
		r.t.Fatalf("action.yml: expression %q is not one the test runner knows", e)
		return ""
	})
}

func readKV(t *testing.T, file string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			out[k] = v
		}
	}
	return out
}

// run runs every run step in order and returns the last step's exit code
// (a step that fails ends the job, as on the runner).
func (r *runner) run() int {
	t := r.t
	for i, s := range r.a.Runs.Steps {
		if s.Uses != "" {
			continue // setup-go and upload-sarif: checked by the test itself
		}
		if s.Shell != "bash" {
			t.Fatalf("step %d (%s): shell %q; the runner needs an explicit shell in a composite step", i, s.Name, s.Shell)
		}
		if expr.MatchString(s.Run) {
			t.Fatalf("step %d (%s): an expression inside run: puts input text into the script; pass it through env:", i, s.Name)
		}
		dir := t.TempDir()
		outFile, pathFile := filepath.Join(dir, "output"), filepath.Join(dir, "path")
		script := filepath.Join(dir, "step.sh")
		if err := os.WriteFile(script, []byte(s.Run), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = r.workspace
		cmd.Env = append(os.Environ(),
			"PATH="+strings.Join(append(append([]string{}, r.path...), os.Getenv("PATH")), string(os.PathListSeparator)),
			"RUNNER_TEMP="+r.temp, "GITHUB_WORKSPACE="+r.workspace,
			"GITHUB_OUTPUT="+outFile, "GITHUB_PATH="+pathFile, "GITHUB_STEP_SUMMARY="+r.summary,
			"GITHUB_ACTION_PATH="+repoRoot(t))
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+r.eval(v))
		}
		out, err := cmd.CombinedOutput()
		t.Logf("step %d (%s):\n%s", i, s.Name, out)
		if s.ID != "" {
			r.outputs[s.ID] = readKV(t, outFile)
		}
		if b, err := os.ReadFile(pathFile); err == nil {
			for _, p := range strings.Fields(string(b)) {
				r.path = append([]string{p}, r.path...)
			}
		}
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode()
			}
			t.Fatal(err)
		}
	}
	return 0
}

// newRunner is a job of the action with inputs, its RUNNER_TEMP temp (the
// action builds ahp-tap into it).
func newRunner(t *testing.T, a action, temp string, inputs map[string]string) *runner {
	r := &runner{t: t, a: a, inputs: map[string]string{}, outputs: map[string]map[string]string{},
		workspace: t.TempDir(), temp: temp}
	r.summary = filepath.Join(t.TempDir(), "summary.md")
	for k, in := range a.Inputs {
		r.inputs[k] = in.Default
	}
	for k, v := range inputs {
		if _, ok := a.Inputs[k]; !ok {
			t.Fatalf("input %q is not declared in action.yml", k)
		}
		r.inputs[k] = v
	}
	for k, in := range a.Inputs {
		if in.Required && r.inputs[k] == "" {
			t.Fatalf("required input %q not given", k)
		}
	}
	return r
}

func TestActionShape(t *testing.T) {
	a := load(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", a.Runs.Using)
	}
	var setup, upload *step
	for i := range a.Runs.Steps {
		s := &a.Runs.Steps[i]
		switch {
		case strings.HasPrefix(s.Uses, "actions/setup-go@"):
			setup = s
		case strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@"):
			upload = s
		}
	}
	if setup == nil || setup.With["go-version-file"] != "${{ github.action_path }}/go.mod" {
		t.Errorf("ahp-tap must be built with the Go that the action's own go.mod names: %+v", setup)
	}
	if upload == nil || !strings.Contains(upload.If, "inputs.upload-sarif == 'true'") ||
		upload.With["sarif_file"] != "${{ steps.replay.outputs.sarif-file }}" {
		t.Errorf("the SARIF upload must run only when asked, on the replay's SARIF file: %+v", upload)
	}
	last := a.Runs.Steps[len(a.Runs.Steps)-1]
	if last.Uses != "" || !strings.Contains(last.Env["AHP_EXIT"], "steps.replay.outputs.exit-code") {
		t.Errorf("the last step must give the replay's verdict, after the upload: %+v", last)
	}
	if a.Outputs["exit-code"].Value != "${{ steps.replay.outputs.exit-code }}" {
		t.Errorf("output exit-code = %q", a.Outputs["exit-code"].Value)
	}
}

// The action's steps as the runner runs them: a capture with errors fails
// the job (after every report, the annotations and the job summary are
// written); fail-on never passes it; an input cannot inject shell.
func TestActionRunsLikeTheRunner(t *testing.T) {
	e2e.Only(t) // a slow case (internal/e2e): CI runs it
	if testing.Short() {
		t.Skip("builds ahp-tap")
	}
	a := load(t)
	capture, err := os.ReadFile(filepath.Join(repoRoot(t), "report/testdata/ci.capture.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The jobs share one RUNNER_TEMP (on GitHub each job has its own): the
	// first job's go install links ahp-tap into it and the others' find it
	// up to date and do not link again, which saves a link of several
	// CPU-seconds each. Every job still runs every step.
	temp := t.TempDir()
	setup := func(r *runner) {
		if err := os.MkdirAll(filepath.Join(r.workspace, "captures"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.workspace, "captures", "ci-1.capture"), capture, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("findings fail the job after every report is written", func(t *testing.T) {
		r := newRunner(t, a, temp, map[string]string{"captures": "captures/*.capture"})
		setup(r)
		if code := r.run(); code != 1 {
			t.Fatalf("job exit = %d, want 1 (the capture has errors)", code)
		}
		if got := r.outputs["replay"]["exit-code"]; got != "1" {
			t.Errorf("output exit-code = %q, want 1", got)
		}
		if got := r.outputs["replay"]["sarif-file"]; got != "ahp.sarif" {
			t.Errorf("output sarif-file = %q, want ahp.sarif", got)
		}
		for _, f := range []string{"ahp.sarif", "ahp-junit.xml", "ahp-report.html"} {
			if st, err := os.Stat(filepath.Join(r.workspace, f)); err != nil || st.Size() == 0 {
				t.Errorf("report %s not written: %v", f, err)
			}
		}
		sum, _ := os.ReadFile(r.summary)
		if !strings.Contains(string(sum), "BASE-2") {
			t.Errorf("job summary lacks the failing check BASE-2:\n%s", sum)
		}
	})

	t.Run("fail-on never passes", func(t *testing.T) {
		r := newRunner(t, a, temp, map[string]string{"captures": "captures/ci-1.capture", "fail-on": "never", "reports": "junit=j.xml"})
		setup(r)
		if code := r.run(); code != 0 {
			t.Fatalf("job exit = %d, want 0 with fail-on never", code)
		}
		if got := r.outputs["replay"]["sarif-file"]; got != "" {
			t.Errorf("sarif-file = %q with no SARIF report asked for", got)
		}
	})

	t.Run("an input cannot inject shell", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "pwned")
		r := newRunner(t, a, temp, map[string]string{
			"captures": "captures/ci-1.capture",
			"args":     "--fail-on never; touch " + marker + " $(touch " + marker + ")",
		})
		setup(r)
		r.run()
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("an input's text ran as a shell command")
		}
	})
}
