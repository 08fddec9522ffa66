package rules

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

var update = flag.Bool("update", false, "rewrite generated files (docs/checks.md) from the code")

// checksDocPath is docs/checks.md, relative to this package.
var checksDocPath = filepath.Join("..", "docs", "checks.md")

// TestChecksDoc keeps docs/checks.md equal to what the catalogue and the
// rule set say. After changing either, regenerate it:
//
//	go test ./rules -run TestChecksDoc -update
func TestChecksDoc(t *testing.T) {
	want := checksDoc(allRuleInfos())
	if *update {
		if err := os.WriteFile(checksDocPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(checksDocPath)
	if err != nil {
		t.Fatalf("%v (generate it with: go test ./rules -run TestChecksDoc -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from rules.Catalogue and the rule set; regenerate it with: go test ./rules -run TestChecksDoc -update", checksDocPath)
	}
}

// Every check is described and reported by at least one rule; every rule
// reports under a catalogue check; every anchor is distinct.
func TestCatalogueComplete(t *testing.T) {
	byCheck := map[string]int{}
	for _, ri := range allRuleInfos() {
		if _, ok := CheckByID(string(ri.Check)); !ok {
			t.Errorf("rule %s reports under %s, which is not in the catalogue", ri.ID, ri.Check)
		}
		byCheck[string(ri.Check)]++
	}
	anchors := map[string]string{}
	for _, c := range Catalogue {
		if c.Description == "" || c.Summary == "" || c.Level == 0 {
			t.Errorf("check %s lacks a description, summary or level", c.ID)
		}
		if byCheck[c.ID] == 0 {
			t.Errorf("check %s has no rule reporting under it", c.ID)
		}
		if prev, dup := anchors[CheckAnchor(c.ID)]; dup {
			t.Errorf("checks %s and %s share the anchor %q", prev, c.ID, CheckAnchor(c.ID))
		}
		anchors[CheckAnchor(c.ID)] = c.ID
	}
	if got, want := CheckHelpURI("TAP-2"), ChecksDocURL+"#tap-2"; got != want {
		t.Errorf("CheckHelpURI(TAP-2) = %s, want %s", got, want)
	}
}

// allRuleInfos is every rule a finding can come from: the default set,
// ahp-tap's own (TAP-1, TAP-2) and the --spec rules.
func allRuleInfos() []tap.RuleInfo {
	var out []tap.RuleInfo
	for _, r := range Default(Options{}) {
		out = append(out, r.Info())
	}
	out = append(out, tap.TapIncomplete, tap.TapInternal)
	out = append(out, ConductRuleInfos()...)
	return append(out, SpecRuleInfos()...)
}

// catalogueSections groups the catalogue for people: each section starts
// at its first check.
var catalogueSections = []struct{ first, title string }{
	{"BASE-1", "Framing and transport bindings"},
	{"BASE-2", "Base Protocol profile: observable checks"},
	{"CORR-1", "Correlation, capabilities, events and effects"},
	{"EDIT-1", "Canonical content and edits"},
	{"COND-1", "Conduct across the backends of a registration"},
	{"TAP-1", "ahp-tap's own facts (about the audit, never about the traffic)"},
}

// checksDoc renders docs/checks.md from the catalogue and the rules.
func checksDoc(infos []tap.RuleInfo) []byte {
	var b bytes.Buffer
	b.WriteString(`# Check catalogue

<!-- Generated from rules.Catalogue and the rule set by TestChecksDoc; do not edit by hand.
     Regenerate with: go test ./rules -run TestChecksDoc -update -->

Every finding ahp-tap reports carries one ` + "`check`" + ` ID from this list, the AHP requirement
(` + "`requirement`" + `) where one applies, the finer-grained ` + "`rule`" + ` that found it, and a level.
Check IDs are a public interface (logs, SARIF rule IDs, baselines and scripts key on them): they
never change meaning. Each check's heading is its ID alone, so its anchor (` + "`#edit-4`" + `) is stable.

Levels: ` + "`error`" + ` for a MUST or MUST NOT broken on the wire; ` + "`warn`" + ` for a SHOULD, or for a fact
that is suspicious but legal; ` + "`info`" + ` for context a reader needs. A check's level is the usual
level of its findings; the rules below say where one reports at another level. § numbers are
sections of the AHP draft. ` + "`ahp-tap rules`" + ` prints the same list.

| check | requirement | level | what is checked |
|---|---|---|---|
`)
	for _, c := range Catalogue {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | %s |\n", c.ID, CheckAnchor(c.ID), cell(dashed(c.Requirement)), c.Level, cell(c.Summary))
	}
	for _, c := range Catalogue {
		for _, s := range catalogueSections {
			if s.first == c.ID {
				fmt.Fprintf(&b, "\n## %s\n", s.title)
			}
		}
		fmt.Fprintf(&b, "\n### %s\n\n", c.ID)
		fmt.Fprintf(&b, "Requirement: %s · Level: `%s`\n\n", dashed(c.Requirement), c.Level)
		fmt.Fprintf(&b, "%s\n\n", ScopeText(c.Scope))
		fmt.Fprintf(&b, "%s\n\n", escapeAngles(c.Description))
		b.WriteString("| rule | level | what it looks at |\n|---|---|---|\n")
		for _, ri := range infos {
			if string(ri.Check) == c.ID {
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", ri.ID, ri.Level, cell(ri.Summary))
			}
		}
	}
	b.WriteString(`
## Traffic from older draft builds

SDKs pinned to earlier states of the ` + "`draft`" + ` snapshot put predictable shapes on the wire. ahp-tap
reports them as any other fault (same check, same level), and adds to the first such finding of a
conversation one sentence naming the likely cause; the summary says so in one line. It is never a
finding of its own.

| shape on the wire | check | matches |
|---|---|---|
`)
	for _, h := range olderDraftShapes {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", h.shape, h.check, h.older)
	}
	b.WriteString(`
## Not observable on the wire

ahp-tap never claims these, and its reports say so where a reader could assume otherwise:
whether a deny or edit was enforced, atomic host staging, which failure policy was applied,
authorization scope, and anything inside opaque ` + "`native`" + ` payloads.
`)
	return b.Bytes()
}

// olderDraftShapes are the shapes the older-draft hint recognises
// (rules/olderdraft.go), for the document.
var olderDraftShapes = []struct {
	shape, check string
	older        olderDraft
}{
	{"`size` or `sha256` inside a `{ref}` content reference, or on a ready (body-selected) attachment part", "EDIT-2", draftBeforeReceipts},
	{"text sent as an uploaded reference (a text part with `body`)", "EDIT-2", draftBeforeInlineMessages},
	{"a message without `role`", "EDIT-1", draftBeforeInlineMessages},
	{"`tool.callId`", "EVT-1", revision01},
	{"`protocolVersion: \"0.1\"`", "BASE-2", revision01},
	{"`mtls` or `workload` in the manifest's `authentication`", "CAP-2, EVT-1", draftWithWorkloadAuth},
	{"authentication `type` `mtls` or `workload` in a registration or a content upload's `auth`; a content selection nested in `categories`", "BASE-5", draftWithWorkloadAuth},
}

func dashed(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(escapeAngles(s), "|", `\|`) }

// escapeAngles keeps text such as <snapshot> from reading as HTML.
func escapeAngles(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}
