package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/internal/norace"
	"github.com/ahp-tap/ahp-tap/tap"
)

// Issue 22: a property test that keeps ahp-tap's verdicts tied to the
// upstream JSON Schemas. It takes every valid message and registration of
// the shared corpus, applies single edits (delete a member, change a
// value's type, put an unknown string where a string was, add an unknown
// member, drop or repeat an array item) and compares ahp-tap's verdict with
// the schema's where the schema decides:
//
//   - the schema rejects the mutant (a type, a required member, an enum, a
//     closed object, a const, a pattern) ⇒ ahp-tap reports an error; so
//     does the profile's extra rule on top (BASE-8: harness with non-empty
//     name and version on every event);
//   - the mutant only adds a member to an object the schema leaves open
//     ("method" on a response included), and the schema accepts it ⇒
//     ahp-tap reports nothing (BASE-3: unknown fields are never findings);
//   - the mutant only replaces a number by another (2^64, 1e308, 0, -1,
//     2.5) and the schema accepts it ⇒ ahp-tap reports nothing: the
//     schema decides types and ranges of numbers (the JSON-RPC id aside).
//
// Where the schema accepts a mutant for other reasons, it does not decide:
// the profile's extra rules (BASE-8, formats, cross-field and cross-message
// rules) may still reject it. A future rule that drifts from the schema
// fails here. AHP_MUTATIONS=all runs every mutant (about 14,000) instead of
// a fixed sample of each fixture's.

// A mutation is one single edit of a document.
type mutation struct {
	what  string // for messages: "delete /params/event/type"
	ptr   string
	added bool // the edit only adds an unknown member to an object
	// numeric: the edit only replaces a number by another number.
	numeric bool
	doc     any
}

// mutants lists every single edit of doc (decoded with UseNumber).
func mutants(doc any) []mutation {
	var out []mutation
	var walk func(v any, ptr string, set func(any) any)
	walk = func(v any, ptr string, set func(any) any) {
		for _, alt := range []any{"zz-not-a-value", json.Number("7"), true, nil, map[string]any{}, []any{}} {
			if sameKind(v, alt) {
				continue
			}
			out = append(out, mutation{what: fmt.Sprintf("%s = %s", ptr, showAny(alt)), ptr: ptr, doc: set(alt)})
		}
		if _, ok := v.(json.Number); ok {
			// Numbers of any size: an integer beyond 64 bits is an integer.
			for _, n := range []string{"18446744073709551616", "1e308", "0", "-1", "2.5"} {
				out = append(out, mutation{what: fmt.Sprintf("%s = %s", ptr, n), ptr: ptr, numeric: true, doc: set(json.Number(n))})
			}
		}
		if s, ok := v.(string); ok && s != "" {
			out = append(out, mutation{what: fmt.Sprintf("%s = \"\"", ptr), ptr: ptr, doc: set("")})
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			out = append(out, mutation{what: "add " + ptr + "/zzUnknownMember", ptr: ptr, added: true, doc: set(with(x, "zzUnknownMember", json.Number("1")))})
			if ptr == "" && x["method"] == nil {
				// A response that also carries "method" is still a response.
				out = append(out, mutation{what: "add /method", ptr: "/method", added: true, doc: set(with(x, "method", "hooks/intercept"))})
			}
			for _, k := range keys {
				kptr := tap.Ptr(ptr, k)
				out = append(out, mutation{what: "delete " + kptr, ptr: kptr, doc: set(withoutKey(x, k))})
				walk(x[k], kptr, func(nv any) any { return set(with(x, k, nv)) })
			}
		case []any:
			for i := range x {
				iptr := tap.Ptr(ptr, i)
				out = append(out, mutation{what: "remove " + iptr, ptr: iptr, doc: set(slices.Delete(slices.Clone(x), i, i+1))})
				out = append(out, mutation{what: "repeat " + iptr, ptr: iptr, doc: set(slices.Insert(slices.Clone(x), i, x[i]))})
				walk(x[i], iptr, func(nv any) any { c := slices.Clone(x); c[i] = nv; return set(c) })
			}
		}
	}
	walk(doc, "", func(v any) any { return v })
	return out
}

func sameKind(a, b any) bool {
	switch a.(type) {
	case string:
		_, ok := b.(string)
		return ok
	case json.Number:
		_, ok := b.(json.Number)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	case nil:
		return b == nil
	case map[string]any:
		_, ok := b.(map[string]any)
		return ok
	case []any:
		_, ok := b.([]any)
		return ok
	}
	return false
}

func with(m map[string]any, k string, v any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for mk, mv := range m {
		c[mk] = mv
	}
	c[k] = v
	return c
}

func withoutKey(m map[string]any, k string) map[string]any {
	c := with(m, k, nil)
	delete(c, k)
	return c
}

func showAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func decodeAny(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// profileRejects reports whether the Base Protocol profile's extra rule
// rejects m whatever the schema says: every event carries harness with
// non-empty string name and version (BASE-8), so deleting it or them,
// emptying them or giving them another type is an error.
func profileRejects(m mutation) bool {
	return strings.HasPrefix(m.ptr, "/params/event/harness") && !m.added && !m.numeric &&
		!strings.HasSuffix(m.what, `= "zz-not-a-value"`)
}

// mutationAllowed lists the mutants where ahp-tap and the schema disagree
// on purpose, each with the reason (docs/checks.md). Keys are a fixture id
// and a mutation, or "*" and a mutation suffix.
var mutationAllowed = map[string]string{}

func TestMutationsAgreeWithSchema(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	if norace.Run(t) {
		return
	}
	cases := loadCorpus(t)
	spec, err := LoadSpec(sharedAHP, "draft")
	if err != nil {
		t.Skipf("no shared schemas: %v", err)
	}
	all := os.Getenv("AHP_MUTATIONS") == "all"
	const perFixture = 25
	total, rejected, added, profile, missed, false_ := 0, 0, 0, 0, 0, 0
	var tCheck, tSchema time.Duration
	var report []string
	for _, c := range cases {
		if !c.verdict() || (c.Binding != "http-json" && c.Binding != "registration-json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(sharedAHP, c.Path))
		if err != nil {
			t.Fatal(err)
		}
		reg := c.Binding == "registration-json"
		cfg := tap.Config{}
		if c.EditContext != nil {
			cfg.EditContext, _, _ = tap.ParseJSON(c.EditContext)
		}
		schemaValid := func(doc any) bool {
			if reg {
				return spec.reg.Validate(doc) == nil
			}
			return spec.entry.Validate(doc) == nil
		}
		base := decodeAny(t, data)
		if !schemaValid(base) {
			continue // the fixture carries the profile's edits the schema does not know
		}
		ms := mutants(base)
		if !all && len(ms) > perFixture {
			h := fnv.New64a()
			h.Write([]byte(c.ID))
			r := rand.New(rand.NewPCG(h.Sum64(), 22))
			r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
			ms = ms[:perFixture]
		}
		for _, m := range ms {
			total++
			raw, err := json.Marshal(m.doc)
			if err != nil {
				t.Fatal(err)
			}
			name := "mutant.json"
			if reg {
				name = "hooks.json"
			}
			var errs, loud []tap.Finding
			t0 := time.Now()
			fs := CheckDocument(name, raw, cfg, Options{})
			tCheck += time.Since(t0)
			for _, f := range fs {
				if f.Level >= tap.Warn {
					loud = append(loud, f)
				}
				if f.Level == tap.Error {
					errs = append(errs, f)
				}
			}
			if reg && DetectKind(name, raw) != DocRegistration {
				// No longer a registration (hooks gone): judged as a
				// message, which it is not either.
				continue
			}
			key := c.ID + " " + m.what
			if _, ok := mutationAllowed[key]; ok {
				continue
			}
			t0 = time.Now()
			sv := schemaValid(m.doc)
			tSchema += time.Since(t0)
			if !sv {
				rejected++
			}
			if m.added && sv {
				added++
			}
			if sv && profileRejects(m) {
				profile++
			}
			switch {
			case !sv && len(errs) == 0:
				missed++
				report = append(report, fmt.Sprintf("missed error: %s: %s (schema rejects it; ahp-tap: %d findings)", c.ID, m.what, len(loud)))
			case profileRejects(m) && len(errs) == 0:
				missed++
				report = append(report, fmt.Sprintf("missed error: %s: %s (the profile rejects it: BASE-8; ahp-tap: %d findings)", c.ID, m.what, len(loud)))
			case sv && m.numeric && m.ptr != "/id" && len(loud) > 0:
				// The JSON-RPC id is exempt: another number is another id
				// (CORR-1 compares it with event.id; CORR-2 warns beyond 2^53).
				false_++
				report = append(report, fmt.Sprintf("false finding: %s: %s (schema accepts it): %s", c.ID, m.what, loud[0]))
			case sv && m.added && len(loud) > 0:
				false_++
				report = append(report, fmt.Sprintf("false finding: %s: %s (schema accepts it): %s", c.ID, m.what, loud[0]))
			}
		}
	}
	if total == 0 {
		t.Skip("no valid fixtures")
	}
	slices.Sort(report)
	for i, r := range report {
		if i == 80 {
			t.Errorf("… and %d more", len(report)-80)
			break
		}
		t.Error(r)
	}
	t.Logf("%d mutants (%d rejected by the schema, %d more by the profile, %d unknown members the schema accepts): %d missed errors, %d false findings; check %v, schema %v",
		total, rejected, profile, added, missed, false_, tCheck, tSchema)
}
