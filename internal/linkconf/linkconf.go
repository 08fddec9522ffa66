// Package linkconf is what the auditing commands' shared flags
// (--registration, --hook, --protocol-version, --timeout, --spec) resolve
// to: the link's tap.Config, the rules' options and the registration as a
// capture header embeds it. Commands parse the flags; this package reads
// the files they name and builds each link's Session the same way.
package linkconf

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Files are the values of the shared flags.
type Files struct {
	Registration string        // --registration FILE ("": none)
	Hook         string        // --hook ID ("": the registration's only hook)
	Snapshot     string        // --protocol-version
	Timeout      time.Duration // --timeout
	Spec         string        // --spec DIR ("": none)
}

// Loaded is what Files resolve to.
type Loaded struct {
	Config  tap.Config
	Options rules.Options
	// Registration is the --registration file's name ("": none).
	Registration string
	// RegDoc is the registration document as captures embed it: with the
	// values of credential-like keys redacted (a registration must never
	// hold a literal credential, but one that does must not leak through
	// a capture).
	RegDoc []byte
	// RegFindings are the findings about the registration itself (BASE-5).
	RegFindings []tap.Finding
}

// Load reads the files f names. Its errors are one-line usage or I/O
// errors (exit 2). With a registration and no hook, Config.HookID is the
// registration's only hook.
func Load(f Files) (*Loaded, error) {
	l := &Loaded{Config: tap.Config{Snapshot: f.Snapshot, Timeout: f.Timeout, HookID: f.Hook}, Registration: f.Registration}
	if f.Hook != "" && f.Registration == "" {
		return nil, fmt.Errorf("--hook needs --registration")
	}
	if f.Timeout < 0 {
		return nil, fmt.Errorf("--timeout must not be negative")
	}
	if f.Registration != "" {
		data, err := os.ReadFile(f.Registration)
		if err != nil {
			return nil, fmt.Errorf("cannot read registration: %v", err)
		}
		reg, dups, err := tap.ParseJSON(tap.TrimBOM(data))
		if err != nil {
			return nil, fmt.Errorf("registration %s is not JSON: %v", f.Registration, err)
		}
		if reg.Kind != tap.Object {
			// Issue 21 item 7: an array said "no hook with id".
			return nil, fmt.Errorf("registration %s must be a JSON object with protocolVersion and hooks, not %s", f.Registration, kindName(reg))
		}
		if len(dups) > 0 {
			// Issue 22: duplicate keys are invalid (BASE-5), and which one
			// the harness uses is unknown, so no check could rely on it.
			return nil, fmt.Errorf("registration %s is invalid (BASE-5): member %q appears more than once at %s; duplicate keys give it no one meaning", f.Registration, dups[0].Key, dups[0].Pointer)
		}
		if f.Hook == "" {
			if f.Hook, err = onlyHook(reg, f.Registration); err != nil {
				return nil, err
			}
			l.Config.HookID = f.Hook
		}
		l.RegDoc = redactRegistration(reg)
		l.Config.Registration = reg
		l.RegFindings = rules.RegistrationFindingsFor(reg, f.Snapshot)
		if f.Hook != "" && tap.FindHook(reg, f.Hook) == nil {
			return nil, fmt.Errorf("registration %s has no hook with id %q", f.Registration, f.Hook)
		}
	}
	if f.Spec != "" {
		s, err := rules.LoadSpec(f.Spec, f.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("--spec: %v", err)
		}
		l.Options.Spec = s
	}
	return l, nil
}

// NewSession builds the tap.Session of one link the way every command
// does: sc (the flags' configuration with the transport's settings, its
// way out usually from output.Output.SessionConfig) checked by ahp-tap's
// rules and, with --spec, the upstream schema. The session reports the
// registration's own findings to its sink when it is made.
func (l *Loaded) NewSession(sc tap.SessionConfig) *tap.Session {
	sc.Rules = rules.Set(l.Options)
	return tap.NewSession(sc)
}

// RegistrationFindings judges the --registration document on its own:
// ahp-tap's checks and, with --spec, the upstream schema. check and replay
// list them under the registration's file name.
func (l *Loaded) RegistrationFindings() []tap.Finding {
	return rules.Set(l.Options).Registration(l.Config.Registration, l.Config.Resolved().Snapshot)
}

// onlyHook returns the id of the registration's only hook, for
// --registration without --hook; with several hooks it refuses, naming
// them, rather than ignoring the registration's subscriptions.
func onlyHook(reg *tap.Value, file string) (string, error) {
	hooks := reg.Get("hooks").Elems()
	var ids []string
	for _, h := range hooks {
		if id, ok := h.Get("id").Text(); ok {
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		return "", nil // BASE-5 reports a registration without hooks
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("registration %s has %d hooks (%s): choose one with --hook ID", file, len(ids), strings.Join(ids, ", "))
}

// redactRegistration returns reg as canonical JSON with the secrets a
// registration may hold replaced by tap.RedactedCredential
// (httpaudit.RedactDocument: the schema's credential locations, secret-like
// names, URL userinfo and query parameters). AHP-SEC-001: a registration
// references credentials, never holds them; one that does must not leak
// through a capture header.
func redactRegistration(reg *tap.Value) []byte {
	// Work on a copy: the engine keeps the original tree.
	cp, _, err := tap.ParseJSON(reg.Canonical())
	if err != nil {
		return nil
	}
	httpaudit.RedactDocument(cp)
	return cp.Canonical()
}

// kindName names a JSON value's kind with its article: "an array".
func kindName(v *tap.Value) string {
	switch v.Kind {
	case tap.Array:
		return "an array"
	case tap.String:
		return "a string"
	case tap.Number:
		return "a number"
	case tap.Bool:
		return "a boolean"
	case tap.Null:
		return "null"
	}
	return "an object"
}
