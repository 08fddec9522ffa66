package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// engineFlags are the flags every auditing command shares: what to check
// against.
type engineFlags struct {
	registration string
	hook         string
	snapshot     string
	timeout      time.Duration
	spec         string
}

func (ef *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&ef.registration, "registration", "", "registration document `FILE` (drives dispatch and deadline checks)")
	fs.StringVar(&ef.hook, "hook", "", "`ID` of the backend entry in the registration this link talks to")
	fs.StringVar(&ef.snapshot, "protocol-version", tap.DefaultSnapshot, "protocol snapshot `V` every message must carry")
	fs.DurationVar(&ef.timeout, "timeout", 0, "response deadline, a `DURATION` with its unit (e.g. 5s), when no subscription gives one")
	fs.StringVar(&ef.spec, "spec", "", "also validate against an upstream schema snapshot in `DIR` (laid out like shared/ahp)")
}

// loaded is what engineFlags resolve to.
type loaded struct {
	cfg tap.Config
	opt rules.Options
	// regDoc is the registration document as captures embed it: with the
	// values of credential-like keys redacted (a registration must never
	// hold a literal credential, but one that does must not leak through
	// a capture).
	regDoc []byte
	// regFindings are the findings about the registration itself (BASE-5).
	regFindings []tap.Finding
}

// load reads the files the flags name. Errors are usage/I-O errors (exit 2).
func (ef *engineFlags) load() (*loaded, error) {
	l := &loaded{cfg: tap.Config{Snapshot: ef.snapshot, Timeout: ef.timeout, HookID: ef.hook}}
	if ef.hook != "" && ef.registration == "" {
		return nil, usageError("--hook needs --registration")
	}
	if ef.timeout < 0 {
		return nil, usageError("--timeout must not be negative")
	}
	if ef.registration != "" {
		data, err := os.ReadFile(ef.registration)
		if err != nil {
			return nil, usageError("cannot read registration: %v", err)
		}
		reg, dups, err := tap.ParseJSON(tap.TrimBOM(data))
		if err != nil {
			return nil, usageError("registration %s is not JSON: %v", ef.registration, err)
		}
		if reg.Kind != tap.Object {
			// Issue 21 item 7: an array said "no hook with id".
			return nil, usageError("registration %s must be a JSON object with protocolVersion and hooks, not %s", ef.registration, kindName(reg))
		}
		if len(dups) > 0 {
			// Issue 22: duplicate keys are invalid (BASE-5), and which one
			// the harness uses is unknown, so no check could rely on it.
			return nil, usageError("registration %s is invalid (BASE-5): member %q appears more than once at %s; duplicate keys give it no one meaning", ef.registration, dups[0].Key, dups[0].Pointer)
		}
		if ef.hook == "" {
			if ef.hook, err = onlyHook(reg, ef.registration); err != nil {
				return nil, err
			}
			l.cfg.HookID = ef.hook
		}
		l.regDoc = redactRegistration(reg)
		l.cfg.Registration = reg
		l.regFindings = rules.RegistrationFindingsFor(reg, ef.snapshot)
		if ef.hook != "" && tap.FindHook(reg, ef.hook) == nil {
			return nil, usageError("registration %s has no hook with id %q", ef.registration, ef.hook)
		}
	}
	if ef.spec != "" {
		s, err := rules.LoadSpec(ef.spec, ef.snapshot)
		if err != nil {
			return nil, usageError("--spec: %v", err)
		}
		l.opt.Spec = s
	}
	return l, nil
}

// parseFlags parses args with fs, mapping a bad flag to exit code 2 with a
// one-line reason (the flag package prints usage on -h).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			printHelp(stderr, fs.Name(), fs)
			return &exitError{code: 0}
		}
		return usageError("%s: %s", fs.Name(), flagError(fs, args, err))
	}
	return nil
}

// flagMessage matches the flag package's error messages that name a flag
// with one dash, whatever was typed.
var flagMessage = regexp.MustCompile(`^(flag provided but not defined: |flag needs an argument: |invalid value "(.*)" for flag |invalid boolean value "(.*)" for )-([^\s:]+)(.*)$`)

// flagError rewrites the flag package's message: the flag as it was typed
// (--bogus, not -bogus), and for a duration without a unit the fix
// (issue 21 item 7: "--timeout 5" said "parse error").
func flagError(fs *flag.FlagSet, args []string, err error) string {
	msg := err.Error()
	sub := flagMessage.FindStringSubmatch(msg)
	if sub == nil {
		return msg
	}
	name := sub[4]
	typed := "--" + name
	if len(name) == 1 {
		typed = "-" + name
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if k, _, _ := strings.Cut(a, "="); k == "-"+name || k == "--"+name {
			typed = k
			break
		}
	}
	if f := fs.Lookup(name); f != nil && strings.HasPrefix(sub[1], "invalid value") {
		why := sub[5]
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case time.Duration:
				if _, perr := time.ParseDuration(sub[2]); perr != nil {
					if _, nerr := strconv.ParseFloat(sub[2], 64); nerr == nil {
						return fmt.Sprintf("%s %s: a duration needs a unit: give one, e.g. %ss or %sms", typed, sub[2], sub[2], sub[2])
					}
					return fmt.Sprintf("%s %q is not a duration (e.g. 5s, 500ms, 2m)", typed, sub[2])
				}
			case int, int64, uint, uint64:
				if why == ": parse error" {
					why = ": not a whole number"
				}
			case float64:
				if why == ": parse error" {
					why = ": not a number"
				}
			}
		}
		return fmt.Sprintf("invalid value %q for %s%s", sub[2], typed, why)
	}
	return strings.Replace(msg, "-"+name, typed, 1)
}

// noArguments refuses arguments a command does not take (issue 21 item
// 7: "demo extra" was accepted and ignored).
func noArguments(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usageError("%s: unexpected argument %q (it takes flags only; run 'ahp-tap %s --help')", fs.Name(), fs.Arg(0), fs.Name())
	}
	return nil
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
