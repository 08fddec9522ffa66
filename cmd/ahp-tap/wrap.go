package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/conduct/live"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/wrap"
)

// runWrap puts ahp-tap in front of every backend of a registration:
// `ahp-tap wrap --dir DIR [-o FILE] REGISTRATION`. The wrapped document goes
// to stdout (or FILE); what was done to each entry, and the `ahp-tap http`
// commands that start the HTTP taps, go to stderr. Exit 1 when the
// registration is invalid (BASE-5): nothing is written then.
func (m *Main) runWrap(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("wrap", flag.ContinueOnError)
	out := fs.String("o", "", "write the wrapped registration to `FILE` (its mode, or the input's, is kept) instead of stdout")
	dir := fs.String("dir", "", "`DIR` for the taps' violation logs, captures and per-event state (created 0700 if absent)")
	tapPath := fs.String("tap", "", "the ahp-tap executable the harness runs, as an absolute `PATH` (default: this one)")
	host := fs.String("listen-host", "127.0.0.1", "`HOST` the HTTP taps listen on")
	base := fs.Int("listen-base", 8787, "first `PORT` of the HTTP taps; each HTTP backend gets the next one")
	snapshot := fs.String("protocol-version", tap.DefaultSnapshot, "protocol snapshot `V` the registration must declare")
	spec := fs.String("spec", "", "also validate against an upstream schema snapshot in `DIR`")
	conductLive := fs.Bool("conduct", false, "also judge the harness's conduct across the backends live: every tap feeds one timeline in DIR/conduct (docs/conduct.md)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("wrap: give one REGISTRATION file (usage: ahp-tap wrap --dir DIR [-o FILE] REGISTRATION)")
	}
	in := fs.Arg(0)
	switch {
	case *dir == "":
		return usageError("wrap: --dir DIR is required (where the taps write their logs and captures)")
	case *base <= 0 || *base > 65535:
		return usageError("wrap: --listen-base %d is not a port", *base)
	case in == "-":
		return usageError("wrap: REGISTRATION must be a file: every tap reads it with --registration")
	}
	o := wrap.Options{ListenHost: *host, ListenBase: *base}
	var err error
	if o.Registration, err = filepath.Abs(in); err != nil {
		return usageError("wrap: %v", err)
	}
	if o.Dir, err = filepath.Abs(*dir); err != nil {
		return usageError("wrap: --dir: %v", err)
	}
	if o.Tap, err = tapExecutable(*tapPath); err != nil {
		return usageError("wrap: %v", err)
	}
	if *conductLive {
		o.Conduct = filepath.Join(o.Dir, "conduct")
	}
	if *out != "" && sameFile(in, *out) {
		return usageError("wrap: -o %s is the input: the taps read the original registration, so write the wrapped one elsewhere", *out)
	}
	doc, info, err := readRegistration(in)
	if err != nil {
		return usageError("wrap: %v", err)
	}

	if err := m.refuseInvalidRegistration(in, doc, *snapshot, *spec); err != nil {
		return err
	}
	wrapped, changes, err := wrap.Wrap(doc, o)
	if err != nil {
		return usageError("wrap: %s: %v", in, err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return usageError("wrap: --dir: %v", err)
	}
	if err := m.writeRegistration(*out, wrapped, info); err != nil {
		return usageError("wrap: %v", err)
	}
	m.sayWrapped(changes, o.Conduct != "")
	if o.Conduct != "" {
		return m.tapConduct(o.Conduct, changes)
	}
	return nil
}

// refuseInvalidRegistration refuses (exit 1) a registration with an error
// finding, listing its findings on stderr. BASE-5: a registration is valid
// before it is used; wrapping an invalid one would only hide that.
func (m *Main) refuseInvalidRegistration(in string, doc []byte, snapshot, spec string) error {
	reg, _, err := tap.ParseJSON(doc)
	if err != nil {
		return usageError("wrap: %s is not JSON: %v", in, err)
	}
	fds := rules.RegistrationFindingsFor(reg, snapshot)
	if spec != "" {
		s, err := rules.LoadSpec(spec, snapshot)
		if err != nil {
			return usageError("wrap: --spec: %v", err)
		}
		fds = append(fds, s.RegistrationFindings(reg)...)
	}
	invalid := false
	for _, f := range fds {
		printable.Fprintf(m.Stderr, "%s: %s\n", in, f)
		invalid = invalid || f.Level == tap.Error
	}
	if invalid {
		return &exitError{code: 1, msg: fmt.Sprintf("wrap: %s is not a valid registration (findings above); nothing was written", in)}
	}
	return nil
}

// sayWrapped says on stderr what wrap did to each hook.
func (m *Main) sayWrapped(changes []wrap.Change, conduct bool) {
	for _, c := range changes {
		printable.Fprintf(m.Stderr, "ahp-tap wrap: %s (%s): %s", c.Hook, c.Transport, c.Action)
		if c.Detail != "" {
			printable.Fprintf(m.Stderr, ": %s", c.Detail)
		}
		fmt.Fprintln(m.Stderr)
		if c.Command != nil {
			printable.Fprintf(m.Stderr, "  the harness now posts to http://%s; start that tap before the harness:\n    %s\n", c.Listen, wrap.ShellQuote(c.Command))
		}
		if conduct && c.Action != "wrapped" {
			fmt.Fprintf(m.Stderr, "ahp-tap wrap: note: %s is not tapped with --conduct: the live conduct timeline does not judge the events it intercepts\n", c.Hook)
		}
	}
}

// tapConduct prepares the --conduct directory dir: the hooks its taps
// feed, for the live conduct timeline.
func (m *Main) tapConduct(dir string, changes []wrap.Change) error {
	var tapped []string
	for _, c := range changes {
		if c.Action == "wrapped" {
			tapped = append(tapped, c.Hook)
		}
	}
	if err := auditlink.CheckDir(dir); err != nil {
		return usageError("wrap: --conduct: %v", err)
	}
	if err := writeTapped(live.PathsFor(dir).Tapped, tapped); err != nil {
		return usageError("wrap: --conduct: %v", err)
	}
	fmt.Fprintf(m.Stderr, "ahp-tap wrap: conduct findings across the backends in %s\n", live.PathsFor(dir).Log)
	return nil
}

// runUnwrap reverses wrap: `ahp-tap unwrap [-o FILE] WRAPPED`. On wrap's own
// output it gives back the original document byte for byte.
func (m *Main) runUnwrap(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("unwrap", flag.ContinueOnError)
	out := fs.String("o", "", "write the unwrapped registration to `FILE` (its mode, or the input's, is kept) instead of stdout")
	tapPath := fs.String("tap", "", "also recognise stdio entries run by the ahp-tap executable at `PATH` (names starting ahp-tap always are)")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("unwrap: give one REGISTRATION file (usage: ahp-tap unwrap [-o FILE] REGISTRATION)")
	}
	in := fs.Arg(0)
	var doc []byte
	var info iofs.FileInfo
	var err error
	if in == "-" {
		doc, err = readAll(m.Stdin)
	} else {
		doc, info, err = readRegistration(in)
	}
	if err != nil {
		return usageError("unwrap: %v", err)
	}
	orig, changes, err := wrap.Unwrap(doc, *tapPath)
	if err != nil {
		return usageError("unwrap: %s: %v", in, err)
	}
	if err := m.writeRegistration(*out, orig, info); err != nil {
		return usageError("unwrap: %v", err)
	}
	for _, c := range changes {
		printable.Fprintf(m.Stderr, "ahp-tap unwrap: %s (%s): %s\n", c.Hook, c.Transport, c.Action)
	}
	return nil
}

// tapExecutable resolves the ahp-tap path a wrapped registration runs.
func tapExecutable(p string) (string, error) {
	if p == "" {
		self, err := selfPath()
		if err != nil {
			return "", err
		}
		if r, err := filepath.EvalSymlinks(self); err == nil {
			self = r
		}
		return self, nil
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("--tap %q is not an absolute path (harnesses run commands without a shell or a full PATH)", p)
	}
	return p, nil
}

func readRegistration(name string) ([]byte, iofs.FileInfo, error) {
	// O_NONBLOCK: a FIFO without a writer is refused below instead of
	// blocking the open, where no signal would be seen (issue 28 item 16);
	// a regular file ignores it.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", name)
	}
	doc, err := readAll(f)
	return doc, info, err
}

// maxRegistration bounds what wrap reads: registrations are small.
const maxRegistration = 16 << 20

func readAll(r io.Reader) ([]byte, error) {
	doc, err := io.ReadAll(io.LimitReader(r, maxRegistration+1))
	if err == nil && len(doc) > maxRegistration {
		return nil, fmt.Errorf("registration larger than %d bytes", maxRegistration)
	}
	// A byte order mark (RFC 8259 lets a parser ignore it) is dropped:
	// the document written is the same JSON without it.
	return tap.TrimBOM(doc), err
}

func sameFile(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// writeRegistration writes doc to name ("" for stdout) by renaming a
// temporary file over it, so a harness never reads half a registration.
// The mode is the existing file's, else the input's without group or
// other write permission (0600 when the input was stdin). A symbolic link
// at name is refused rather than followed.
func (m *Main) writeRegistration(name string, doc []byte, input iofs.FileInfo) error {
	if name == "" {
		_, err := m.Stdout.Write(doc)
		return err
	}
	mode := iofs.FileMode(0o600)
	if input != nil {
		mode = input.Mode().Perm() &^ 0o022
	}
	if st, err := os.Lstat(name); err == nil {
		if st.Mode()&iofs.ModeSymlink != 0 {
			return fmt.Errorf("-o %s is a symbolic link; give the file itself", name)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("-o %s is not a regular file", name)
		}
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(doc); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
