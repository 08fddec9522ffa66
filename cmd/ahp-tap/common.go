package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/linkconf"
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
type loaded = linkconf.Loaded

// load reads the files the flags name. Errors are usage/I-O errors (exit
// 2). Without --hook, the registration's only hook becomes ef.hook.
func (ef *engineFlags) load() (*loaded, error) {
	l, err := linkconf.Load(linkconf.Files{Registration: ef.registration, Hook: ef.hook, Snapshot: ef.snapshot, Timeout: ef.timeout, Spec: ef.spec})
	if err != nil {
		return nil, usageError("%v", err)
	}
	ef.hook = l.Config.HookID
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

// flagsGiven is the set of the flags given on the command line.
func flagsGiven(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
