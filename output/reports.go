package output

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"io"
	"io/fs"
	"os"

	"github.com/ahp-tap/ahp-tap/internal/safefile"
	"github.com/ahp-tap/ahp-tap/report"
	"github.com/ahp-tap/ahp-tap/tap"
)

// ReportFormats are the report formats, in the order help lists them.
var ReportFormats = []string{"text", "json", "junit", "sarif", "github", "html"}

// A ReportSpec is one report to write: its format and its file ("" or
// "-": Stdout).
type ReportSpec struct {
	Format, File string
}

// ReportsConfig is what an offline run (check, replay) writes.
type ReportsConfig struct {
	// Specs are the reports, each format one of ReportFormats; at most
	// one goes to Stdout.
	Specs []ReportSpec
	// Stdout receives the report without a file; Stderr one-line notices
	// (a mode changed, results left out, stale baseline entries, the
	// claim matrix when no text or JSON report holds it).
	Stdout, Stderr io.Writer
	// Baseline is the --baseline file ("": none; one that does not exist
	// yet is an empty baseline); WriteBaseline the --write-baseline file.
	Baseline, WriteBaseline string
	// Claim, when set, makes the run build a claim matrix.
	Claim *report.Claim
	// SarifRoot is the directory SARIF and annotation paths are relative
	// to ("": the working directory).
	SarifRoot string
	// Header describes the run; FailOn is the level that fails it.
	Header report.Header
	FailOn tap.Level
	// StepSummary is the GitHub job summary file the github report
	// appends to ("": none; usually GITHUB_STEP_SUMMARY).
	StepSummary string
}

// Reports are the open reports of one offline run: the streaming writers
// fed by the report.Run, and the text and JSON reports written at the end
// from the collected findings.
type Reports struct {
	cfg     ReportsConfig
	run     *report.Run
	writers []report.Writer
	closers []io.Closer
	classic []Classic
	sarif   *report.SARIF
	// End is what the run concluded, once Finish returned.
	End *report.End
	// JSONHeader is the run's header with the inputs' sizes and digests,
	// once Finish returned.
	JSONHeader *report.JSONHeader
}

// A Classic is a text or JSON report, written at the end.
type Classic struct {
	Format string
	W      io.Writer
}

// OpenReports reads the baseline and opens every report file before any
// work, so that a bad path fails fast, and starts the run. Report and
// baseline files are created 0600 (safefile.Create: never through a
// symlink, never a FIFO); nothing stays open on an error.
func OpenReports(cfg ReportsConfig) (*Reports, error) {
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	rs := &Reports{cfg: cfg}
	var baseline *report.Baseline
	if cfg.Baseline != "" {
		b, err := ReadBaseline(cfg.Baseline, cfg.Stderr)
		if err != nil {
			return nil, err
		}
		baseline = b
	}
	for _, s := range cfg.Specs {
		w := cfg.Stdout
		if s.File != "" && s.File != "-" {
			f, err := CreateFile(s.File, cfg.Stderr)
			if err != nil {
				rs.Close()
				return nil, fmt.Errorf("--report %s=%s: %v", s.Format, s.File, err)
			}
			bw := bufio.NewWriterSize(f, 64<<10)
			rs.closers = append([]io.Closer{flushCloser{bw}}, append(rs.closers, f)...)
			w = bw
		}
		switch s.Format {
		case "text", "json":
			rs.classic = append(rs.classic, Classic{Format: s.Format, W: w})
		case "junit":
			rs.writers = append(rs.writers, report.NewJUnit(w))
		case "sarif":
			rs.sarif = report.NewSARIF(w)
			rs.writers = append(rs.writers, rs.sarif)
		case "github":
			rs.writers = append(rs.writers, report.NewGitHub(w, cfg.StepSummary))
		case "html":
			rs.writers = append(rs.writers, report.NewHTML(w))
		default:
			rs.Close()
			return nil, fmt.Errorf("--report: format %q is not one of %v", s.Format, ReportFormats)
		}
	}
	if cfg.WriteBaseline != "" {
		// Checked now, written at the end.
		f, err := CreateFile(cfg.WriteBaseline, cfg.Stderr)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("--write-baseline: %v", err)
		}
		f.Close()
	}
	run, err := report.NewRun(report.RunConfig{Header: cfg.Header, Writers: rs.writers, Root: cfg.SarifRoot,
		Baseline: baseline, Claim: cfg.Claim, FailOn: cfg.FailOn})
	if err != nil {
		rs.Close()
		return nil, err
	}
	rs.run = run
	return rs, nil
}

// Run is the streaming report run: feed it through Run.SessionConfig and
// Run.Closed (or Run.Replay).
func (rs *Reports) Run() *report.Run { return rs.run }

// Classic lists the text and JSON reports, written at the end by the
// command from the collected findings.
func (rs *Reports) Classic() []Classic { return rs.classic }

// Finish ends the run: the streaming writers get the totals, the claim
// matrix (when no text or JSON report holds it), results SARIF left out
// and stale baseline entries go to Stderr, and the baseline is written.
func (rs *Reports) Finish() (*report.End, error) {
	end, err := rs.run.Close()
	rs.End = end
	if err != nil {
		rs.Close()
		return end, fmt.Errorf("writing a report: %v", err)
	}
	rs.JSONHeader = report.HeaderOf(rs.cfg.Header, end)
	if end.Claim != nil && len(rs.classic) == 0 {
		end.Claim.WriteText(rs.cfg.Stderr)
	}
	if rs.sarif != nil && rs.sarif.Dropped() > 0 {
		fmt.Fprintf(rs.cfg.Stderr, "ahp-tap: SARIF report: %d results left out (GitHub takes at most %d per run)\n", rs.sarif.Dropped(), report.SARIFMaxResults)
	}
	if s := report.StaleSummary(end); s != "" {
		printable.Fprintf(rs.cfg.Stderr, "ahp-tap: %s\n", s) // one line, however many (issue 28 item 9)
	}
	if rs.cfg.WriteBaseline != "" {
		f, err := CreateFile(rs.cfg.WriteBaseline, nil)
		if err != nil {
			return end, fmt.Errorf("--write-baseline: %v", err)
		}
		werr := rs.run.NewBaseline().Write(f)
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return end, fmt.Errorf("--write-baseline: %v", werr)
		}
	}
	return end, nil
}

// Close flushes and closes every report file; the first error wins. It is
// idempotent.
func (rs *Reports) Close() error {
	var first error
	for _, c := range rs.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	rs.closers = nil
	return first
}

// flushCloser flushes a buffered report file before it is closed.
type flushCloser struct{ w *bufio.Writer }

func (f flushCloser) Close() error { return f.w.Flush() }

// ReadBaseline reads a --baseline file. One that does not exist yet (the
// first run of a CI recipe) is an empty baseline: every finding counts and
// the exit code says so, every report is still written, and one line on
// stderr says how to create it (issue 21 item 4).
func ReadBaseline(path string, stderr io.Writer) (*report.Baseline, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		printable.Fprintf(stderr, "ahp-tap: --baseline %s does not exist yet: no finding is accepted; create it with --write-baseline %s\n", path, path)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--baseline: %v", err)
	}
	defer f.Close()
	b, err := report.ReadBaseline(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %v", path, err)
	}
	return b, nil
}

// CreateFile creates (or truncates) a report or baseline file: mode 0600
// (an existing wider one is made 0600, and stderr says so), never through
// a symlink at the path, never blocking on a FIFO, only a regular file
// (safefile.Create).
func CreateFile(path string, stderr io.Writer) (*os.File, error) {
	f, notice, err := safefile.Create(path)
	if err != nil {
		return nil, err
	}
	if notice != "" && stderr != nil {
		printable.Fprintf(stderr, "ahp-tap: %s\n", notice)
	}
	return f, nil
}

// RefuseInputs refuses an output file that is one of the inputs (the same
// file by device and inode, whatever its name): opening it would destroy
// the input before it is read (issue 28 item 10). outputs maps each
// output's flag text ("--report json=", "--log") to its path.
func RefuseInputs(outputs [][2]string, inputs []string) error {
	for _, o := range outputs {
		flag, path := o[0], o[1]
		if path == "" || path == "-" {
			continue
		}
		if same, ok := safefile.SameFile(path, inputs); ok {
			return fmt.Errorf("%s %s is the input %s; refusing to write over an input", flag, path, same)
		}
	}
	return nil
}
