package main

import (
	"context"
	"flag"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/ahp-tap/ahp-tap/internal/printable"
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
	if *out != "" && wrap.SameFile(in, *out) {
		return usageError("wrap: -o %s is the input: the taps read the original registration, so write the wrapped one elsewhere", *out)
	}
	doc, info, err := wrap.ReadRegistration(in)
	if err != nil {
		return usageError("wrap: %v", err)
	}

	// BASE-5: a registration is valid before it is used; wrapping an
	// invalid one would only hide that (exit 1, its findings listed).
	if invalid, err := wrap.CheckRegistration(m.Stderr, in, doc, *snapshot, *spec); err != nil {
		return usageError("%v", err)
	} else if invalid {
		return &exitError{code: 1, msg: fmt.Sprintf("wrap: %s is not a valid registration (findings above); nothing was written", in)}
	}
	wrapped, changes, err := wrap.Wrap(doc, o)
	if err != nil {
		return usageError("wrap: %s: %v", in, err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return usageError("wrap: --dir: %v", err)
	}
	if err := m.writeWrapped(*out, wrapped, info); err != nil {
		return usageError("wrap: %v", err)
	}
	wrap.Describe(m.Stderr, changes, o)
	if o.Conduct != "" {
		if err := wrap.PrepareConduct(m.Stderr, o.Conduct, changes); err != nil {
			return usageError("%v", err)
		}
	}
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
		doc, err = wrap.ReadDocument(m.Stdin)
	} else {
		doc, info, err = wrap.ReadRegistration(in)
	}
	if err != nil {
		return usageError("unwrap: %v", err)
	}
	orig, changes, err := wrap.Unwrap(doc, *tapPath)
	if err != nil {
		return usageError("unwrap: %s: %v", in, err)
	}
	if err := m.writeWrapped(*out, orig, info); err != nil {
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

// writeWrapped writes doc to name ("" for stdout; wrap.WriteRegistration
// otherwise).
func (m *Main) writeWrapped(name string, doc []byte, input iofs.FileInfo) error {
	if name == "" {
		_, err := m.Stdout.Write(doc)
		return err
	}
	return wrap.WriteRegistration(name, doc, input)
}
