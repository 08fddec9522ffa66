package wrap

import (
	"fmt"
	"io"
	"slices"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// CheckRegistration judges the registration doc (the file in) before it
// is wrapped: ahp-tap's checks of snapshot and, with spec ("": none), the
// upstream schema. It lists every finding on w and reports whether one is
// an error (BASE-5: a registration is valid before it is used; wrapping
// an invalid one would only hide that). Its error is one line (a usage
// error).
func CheckRegistration(w io.Writer, in string, doc []byte, snapshot, spec string) (invalid bool, err error) {
	reg, _, err := tap.ParseJSON(doc)
	if err != nil {
		return false, fmt.Errorf("wrap: %s is not JSON: %v", in, err)
	}
	fds := rules.RegistrationFindingsFor(reg, snapshot)
	if spec != "" {
		s, err := rules.LoadSpec(spec, snapshot)
		if err != nil {
			return false, fmt.Errorf("wrap: --spec: %v", err)
		}
		fds = append(fds, s.RegistrationFindings(reg)...)
	}
	for _, f := range fds {
		printable.Fprintf(w, "%s: %s\n", in, f)
		invalid = invalid || f.Level == tap.Error
	}
	return invalid, nil
}

// Describe says on w what Wrap did to each hook, and the `ahp-tap http`
// command that starts the HTTP taps.
func Describe(w io.Writer, changes []Change, o Options) {
	for _, c := range changes {
		printable.Fprintf(w, "ahp-tap wrap: %s (%s): %s", c.Hook, c.Transport, c.Action)
		if c.Detail != "" {
			printable.Fprintf(w, ": %s", c.Detail)
		}
		fmt.Fprintln(w)
		if c.Command != nil {
			printable.Fprintf(w, "  the harness now posts to http://%s\n", c.Listen)
		}
		if o.Conduct != "" && c.Action != "wrapped" {
			fmt.Fprintf(w, "ahp-tap wrap: note: %s is not tapped with --conduct: the live conduct timeline does not judge the events it intercepts\n", c.Hook)
		}
	}
	// One `ahp-tap http` for every HTTP backend (one --route each): one
	// process sees them all, one link per hook (issue 23).
	if cmd := HTTPCommand(o, changes); cmd != nil {
		what := ""
		if slices.Contains(cmd, "--route") {
			what = " (one process for every HTTP backend, one --route each)"
		}
		printable.Fprintf(w, "ahp-tap wrap: start the HTTP tap before the harness%s:\n    %s\n", what, ShellQuote(cmd))
	}
}

// PrepareConduct prepares the --conduct directory dir: the hooks its taps
// feed, for the live conduct timeline; it says on w where the findings
// go. Its error is one line (a usage error).
func PrepareConduct(w io.Writer, dir string, changes []Change) error {
	var tapped []string
	for _, c := range changes {
		if c.Action == "wrapped" {
			tapped = append(tapped, c.Hook)
		}
	}
	if err := auditlink.CheckDir(dir); err != nil {
		return fmt.Errorf("wrap: --conduct: %v", err)
	}
	if err := live.WriteTapped(live.PathsFor(dir).Tapped, tapped); err != nil {
		return fmt.Errorf("wrap: --conduct: %v", err)
	}
	fmt.Fprintf(w, "ahp-tap wrap: conduct findings across the backends in %s\n", live.PathsFor(dir).Log)
	return nil
}
