package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// schemaDir holds the upstream draft schemas, beside the repository.
var schemaDir = filepath.Join(sharedAHP, "schema/draft")

// readSchema decodes one upstream schema file, skipping when absent.
func readSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(schemaDir, name))
	if os.IsNotExist(err) {
		t.Skipf("upstream schemas not found at %s", schemaDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// at walks decoded JSON by keys.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// strs returns the strings of a decoded JSON array, sorted.
func strs(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, e := range a {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func sameSet(t *testing.T, what string, ours, upstream []string) {
	t.Helper()
	if !slices.Equal(sorted(ours), sorted(upstream)) {
		t.Errorf("%s: ours %v, upstream %v", what, sorted(ours), sorted(upstream))
	}
}

// TestVocabularyMatchesUpstream checks every table of vocabulary.go
// against the upstream draft schemas: the event types and which are
// interceptable (registration subscriptions), what each boundary allows
// (capabilities per-boundary definitions), the effect types and modify
// targets (effect schema), and the methods.
func TestVocabularyMatchesUpstream(t *testing.T) {
	reg := readSchema(t, "registration.schema.json")
	sameSet(t, "event types", eventTypes, strs(at(reg, "$defs", "observeSubscription", "properties", "events", "items", "anyOf").([]any)[0].(map[string]any)["enum"]))
	sameSet(t, "interceptable events", interceptableEvents, strs(at(reg, "$defs", "interceptSubscription", "properties", "events", "items", "anyOf").([]any)[0].(map[string]any)["enum"]))
	if len(eventTypes) != 32 || len(interceptableEvents) != 19 || len(wireEvents) != 32 {
		t.Errorf("%d event types (%d interceptable, %d in wireEvents); the draft has 32 and 19", len(eventTypes), len(interceptableEvents), len(wireEvents))
	}

	caps := readSchema(t, "capabilities.schema.json")
	defs := at(caps, "$defs").(map[string]any)
	var names []string
	for name, d := range defs {
		names = append(names, name)
		props := at(d, "allOf").([]any)[1].(map[string]any)["properties"]
		b := boundaries[name]
		sameSet(t, name+" effects", b.Effects, strs(at(props, "effects", "items", "enum")))
		var target []string
		if b.Target != "" {
			target = []string{b.Target}
		}
		sameSet(t, name+" modify target", target, strs(at(props, "modify", "propertyNames", "enum")))
		sameSet(t, name+" flow operations", b.FlowOps, strs(at(props, "flow", "properties", "operations", "items", "enum")))
	}
	var ours []string
	for name := range boundaries {
		ours = append(ours, name)
	}
	sameSet(t, "boundaries", ours, names)
	sameSet(t, "boundaries are the interceptable events", ours, interceptableEvents)

	eff := readSchema(t, "effect.schema.json")
	var types []string
	for _, alt := range at(eff, "oneOf").([]any) {
		if c, ok := at(alt, "properties", "type", "const").(string); ok {
			types = append(types, c)
		}
		if ref, _ := at(alt, "$ref").(string); ref != "" {
			if c, ok := at(readSchema(t, ref), "properties", "type", "const").(string); ok {
				types = append(types, c)
			}
		}
		if tg := at(alt, "properties", "target", "enum"); tg != nil {
			sameSet(t, "modify targets", modifyTargets, strs(tg))
		}
	}
	sort.Strings(types)
	sameSet(t, "core effects", coreEffects, slices.Compact(types)) // flow has one variant per operation
	sameSet(t, "core effect names", coreEffects, keys(coreEffectNames))

	var methods []string
	for _, f := range []string{"intercept-request.schema.json", "observe-notification.schema.json", "capabilities-request.schema.json"} {
		for _, part := range at(readSchema(t, f), "allOf").([]any) {
			if m, ok := at(part, "properties", "method", "const").(string); ok {
				methods = append(methods, m)
			}
		}
	}
	sameSet(t, "methods", protocolMethods, methods)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestVocabularyAgreesWithTheRules checks the tables that still live
// beside the rules that use them against vocabulary.go: the per-event
// payload specs, the edit evaluator's event list and modify slots.
func TestVocabularyAgreesWithTheRules(t *testing.T) {
	var specs []string
	for name := range eventSpecs {
		specs = append(specs, name)
	}
	sameSet(t, "event payload specs (events.go)", specs, eventTypes)
	for name, spec := range eventSpecs {
		if spec.interceptable != wireEvents[name] {
			t.Errorf("events.go says %s interceptable=%v, vocabulary.go %v", name, spec.interceptable, wireEvents[name])
		}
	}
	sameSet(t, "edit evaluator events (editeval.go knownEvents)", knownEvents, eventTypes)
	for name, b := range boundaries {
		var got []string
		for target := range slots[name] {
			got = append(got, target)
		}
		var want []string
		if b.Target != "" {
			want = []string{b.Target}
		}
		sameSet(t, name+" modify slots (editeval.go)", got, want)
	}
	for name := range slots {
		if _, ok := boundaries[name]; !ok {
			t.Errorf("editeval.go has modify slots for %s, which is no boundary", name)
		}
	}
}
