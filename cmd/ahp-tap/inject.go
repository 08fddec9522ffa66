package main

import (
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/ahp-tap/ahp-tap/inject"
	"github.com/ahp-tap/ahp-tap/internal/safefile"
)

// injectFlags are --inject SPEC (repeatable) and --seed N of the taps
// (issue 25): parsing and wiring only; package inject decides.
type injectFlags struct {
	transport inject.Transport
	faults    []inject.Fault
	seed      uint64
	seedSet   bool
}

func (f *injectFlags) register(fs *flag.FlagSet, t inject.Transport) {
	f.transport = t
	fs.Var((*injectSpecs)(f), "inject", "inject a backend fault `SPEC` on purpose (repeatable; off by default): FAULT[,SELECTOR…], e.g. drop,event=tool.before; see docs/inject.md")
	fs.Var((*injectPlanFile)(f), "inject-plan", "inject the faults of the named scenarios of `FILE` on purpose, as --inject does (JSON: {\"scenarios\": [{\"name\": NAME, \"inject\": SPEC}, …]}); see docs/inject.md")
	fs.Var((*injectSeed)(f), "seed", "with --inject p=…: the random `N` that makes the faults' choice reproducible (default: a new one, printed in the banner)")
}

// injectSpecs is --inject as a flag.Value: each SPEC is parsed as given.
type injectSpecs injectFlags

func (s *injectSpecs) String() string {
	if s == nil {
		return ""
	}
	specs := make([]string, len(s.faults))
	for i, f := range s.faults {
		specs[i] = f.Spec
	}
	return strings.Join(specs, "; ")
}

func (s *injectSpecs) Set(v string) error {
	f, err := inject.Parse(v)
	if err == nil {
		err = f.Check(s.transport)
	}
	if err != nil {
		return err
	}
	s.faults = append(s.faults, f)
	return nil
}

// injectPlanFile is --inject-plan as a flag.Value: the file is read (no
// symbolic link, at most inject.MaxPlanBytes) and its scenarios parsed as
// given.
type injectPlanFile injectFlags

func (p *injectPlanFile) String() string { return "" }

func (p *injectPlanFile) Set(v string) error {
	data, err := safefile.ReadSmall(v, inject.MaxPlanBytes)
	if err != nil {
		return fmt.Errorf("--inject-plan: %v", err)
	}
	faults, err := inject.ParsePlan(data, p.transport)
	if err != nil {
		return err
	}
	p.faults = append(p.faults, faults...)
	return nil
}

// injectSeed is --seed as a flag.Value.
type injectSeed injectFlags

func (s *injectSeed) String() string {
	if s == nil || !s.seedSet {
		return ""
	}
	return strconv.FormatUint(s.seed, 10)
}

func (s *injectSeed) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("--seed needs a whole number from 0 to %d", uint64(1<<64-1))
	}
	s.seed, s.seedSet = n, true
	return nil
}

// on says whether any fault was asked for.
func (f *injectFlags) on() bool { return len(f.faults) > 0 }

// plan is the plan of the faults for the tap of hook, nil without --inject.
// Without --seed it draws one, and sets it so that the flags handed to an
// audit process say it too.
func (f *injectFlags) plan(hook string) *inject.Plan {
	if !f.on() {
		return nil
	}
	if !f.seedSet {
		var b [8]byte
		_, _ = rand.Read(b[:])
		f.seed, f.seedSet = binary.LittleEndian.Uint64(b[:]), true
	}
	return inject.NewPlan(f.faults, hook, f.seed)
}

// seedArg is the --seed flag that repeats the plan's seed, "" when --inject
// is off.
func (f *injectFlags) seedArg() string {
	if !f.on() {
		return ""
	}
	return "--seed=" + strconv.FormatUint(f.seed, 10)
}
