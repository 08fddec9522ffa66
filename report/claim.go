package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ahp-tap/ahp-tap/internal/printable"
	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
	"github.com/ahp-tap/ahp-tap/vocab"
)

// A Claim is a conformance claim (--claim role=…,binding=…,profiles=…):
// the Base Protocol profile's claim inputs.
type Claim struct {
	Role     string   `json:"role"`    // harness, backend or both
	Binding  string   `json:"binding"` // stdio, http or both
	Profiles []string `json:"profiles"`
	// Requirements maps each profile to its requirement IDs (the snapshot's
	// conformance manifest), and Texts each requirement to its wording
	// when the manifest was read from --spec.
	Requirements map[string][]string `json:"-"`
	Texts        map[string]string   `json:"-"`
}

// draftProfiles is the draft snapshot's profile-to-requirement mapping
// (conformance/draft/manifest.json), used when no --spec is given.
var draftProfiles = map[string][]string{
	"base": {"AHP-CORE-001", "AHP-CORE-002", "AHP-RPC-001", "AHP-RPC-002", "AHP-VER-001", "AHP-CORE-003",
		"AHP-EXT-001", "AHP-REG-001", "AHP-REG-002", "AHP-SEC-001", "AHP-CONTENT-001", "AHP-CONTENT-002", "AHP-EDIT-001"},
	"tool-interception": {"AHP-TB-001", "AHP-CAP-001", "AHP-CAP-002", "AHP-DEC-001", "AHP-DEC-002", "AHP-DEC-003",
		"AHP-COMP-001", "AHP-FAIL-001", "AHP-FAIL-002", "AHP-CORE-004"},
	"lifecycle-observation": {"AHP-RPC-002"},
	"stdio":                 {"AHP-STDIO-001"},
	"http":                  {"AHP-HTTP-001", "AHP-AUTH-001"},
}

// capabilityProfiles are the profiles that count as a capability-profile
// claim (the Base profile: "A Base Protocol claim is incomplete without a
// capability-profile claim and at least one transport-binding claim").
var capabilityProfiles = []string{"tool-interception", "lifecycle-observation"}

// notObservable says, per requirement, what the wire cannot show (CHECKS.md
// "Not observable on the wire"): a claim matrix never marks these passed.
var notObservable = map[string]string{
	"AHP-CORE-001": "a property of the claim document, not of traffic",
	"AHP-CORE-002": "a property of the implementation's claim, not of traffic",
	"AHP-DEC-002":  "whether a deny was enforced is not observable on the wire",
	"AHP-DEC-003":  "authorization, permissions and sandboxing are not observable on the wire",
	"AHP-COMP-001": "interceptor order across backends is observable only when every backend of the registration is tapped (COND-1…COND-6)",
	"AHP-FAIL-001": "which failure policy the harness applied is not observable on the wire",
}

// ParseClaim parses --claim: role=harness|backend|both,
// binding=stdio|http|both, profiles=P1,P2… (profile names may follow
// profiles= separated by commas). spec, when not "", is the --spec
// directory whose conformance manifest replaces the embedded draft one.
func ParseClaim(s, spec, snapshot string) (*Claim, error) {
	c := &Claim{}
	last := ""
	for _, tok := range strings.Split(s, ",") {
		tok = strings.TrimSpace(tok)
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			if last != "profiles" || tok == "" {
				return nil, fmt.Errorf("--claim: %q is not key=value (want role=…,binding=…,profiles=…)", tok)
			}
			c.Profiles = append(c.Profiles, tok)
			continue
		}
		last = k
		switch k {
		case "role":
			c.Role = v
		case "binding":
			c.Binding = v
		case "profiles":
			if v != "" {
				c.Profiles = append(c.Profiles, v)
			}
		default:
			return nil, fmt.Errorf("--claim: unknown key %q (want role, binding, profiles)", k)
		}
	}
	if !slices.Contains([]string{"harness", "backend", "both"}, c.Role) {
		return nil, fmt.Errorf("--claim: role=%q is not harness, backend or both", c.Role)
	}
	if !slices.Contains([]string{"stdio", "http", "both"}, c.Binding) {
		return nil, fmt.Errorf("--claim: binding=%q is not stdio, http or both", c.Binding)
	}
	c.Requirements = draftProfiles
	if spec != "" {
		m, texts, err := loadProfiles(spec, snapshot)
		if err != nil {
			return nil, fmt.Errorf("--claim: %v", err)
		}
		c.Requirements, c.Texts = m, texts
	}
	if len(c.Profiles) == 0 {
		return nil, fmt.Errorf("--claim: no profiles= given (e.g. profiles=base,tool-interception)")
	}
	for _, p := range c.Profiles {
		if _, ok := c.Requirements[p]; !ok || p == "stdio" || p == "http" {
			return nil, fmt.Errorf("--claim: unknown profile %q (bindings go in binding=)", p)
		}
	}
	return c, nil
}

// loadProfiles reads DIR/conformance/<snapshot>/manifest.json and, when
// present, DIR/spec/<snapshot>/requirements.json.
func loadProfiles(dir, snapshot string) (map[string][]string, map[string]string, error) {
	if snapshot == "" {
		snapshot = tap.DefaultSnapshot
	}
	data, err := os.ReadFile(filepath.Join(dir, "conformance", snapshot, "manifest.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("no conformance manifest: %v", err)
	}
	var man struct {
		Profiles []struct {
			ID           string   `json:"id"`
			Requirements []string `json:"requirements"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(tap.TrimBOM(data), &man); err != nil {
		return nil, nil, fmt.Errorf("conformance manifest: %v", err)
	}
	m := map[string][]string{}
	for _, p := range man.Profiles {
		m[p.ID] = p.Requirements
	}
	texts := map[string]string{}
	if data, err := os.ReadFile(filepath.Join(dir, "spec", snapshot, "requirements.json")); err == nil {
		var reqs struct {
			Requirements []struct {
				ID   string `json:"id"`
				Text string `json:"text"`
			} `json:"requirements"`
		}
		if json.Unmarshal(tap.TrimBOM(data), &reqs) == nil {
			for _, r := range reqs.Requirements {
				texts[r.ID] = r.Text
			}
		}
	}
	return m, texts, nil
}

// profilesInScope are the claimed profiles followed by the binding
// profiles the claim names.
func (c *Claim) profilesInScope() []string {
	out := slices.Clone(c.Profiles)
	if c.Binding == "stdio" || c.Binding == "both" {
		out = append(out, "stdio")
	}
	if c.Binding == "http" || c.Binding == "both" {
		out = append(out, "http")
	}
	return out
}

// judges reports whether check gives evidence about role at all: the
// catalogue's Scope.Judges (a check judging the sender judges both).
func judges(check, role string) bool { return rules.CheckJudgesRole(check, role) }

// A ClaimMatrix is the evidence for a claim: each requirement of the
// claimed profiles against the traffic.
type ClaimMatrix struct {
	Claim Claim `json:"claim"`
	// Incomplete says why the claim itself is incomplete, "" when it is not.
	Incomplete string     `json:"incomplete,omitempty"`
	Rows       []ClaimRow `json:"requirements"`
	// NotObservable repeats what a claim matrix never shows.
	NotObservable string `json:"notObservable"`
}

// A ClaimRow is one requirement of one claimed profile.
type ClaimRow struct {
	Profile     string `json:"profile"`
	Requirement string `json:"requirement"`
	Text        string `json:"text,omitempty"`
	// Status is "passed" (exercised, no finding), "failed", "not
	// exercised" or "not observable".
	Status string `json:"status"`
	// Checks are the catalogue checks that give evidence, Findings their
	// findings attributed to the claimed role, Example the first one.
	Checks   []string `json:"checks,omitempty"`
	Findings int      `json:"findings,omitempty"`
	Example  string   `json:"example,omitempty"`
	// Why explains a status other than passed.
	Why string `json:"why,omitempty"`
}

// claimState gathers evidence while the run streams: per check, the
// findings attributed to the claimed role and whether any input
// exercised it.
type claimState struct {
	c         *Claim
	failures  map[string]int
	example   map[string]string
	exercised map[string]bool
}

func newClaimState(c *Claim) *claimState {
	return &claimState{c: c, failures: map[string]int{}, example: map[string]string{}, exercised: map[string]bool{}}
}

func (cs *claimState) finding(it *Item) {
	f := it.Finding
	if f.Level < tap.Warn || !rules.JudgesRole(f.Check, f.Dir, cs.c.Role) {
		return // about the other party
	}
	cs.failures[f.Check]++
	if cs.example[f.Check] == "" {
		cs.example[f.Check] = exampleText(it)
	}
}

func (cs *claimState) input(e *InputEnd) {
	for _, st := range e.Checks {
		if st.Exercised {
			cs.exercised[st.Check] = true
		}
	}
}

func (cs *claimState) matrix([]InputEnd) *ClaimMatrix {
	c := cs.c
	m := &ClaimMatrix{Claim: *c, NotObservable: "ahp-tap never claims whether a deny or edit was enforced, atomic host staging, " +
		"which failure policy was applied, authorization scope, or anything inside opaque native payloads: the wire cannot show them."}
	if slices.Contains(c.Profiles, "base") && !slices.ContainsFunc(c.Profiles, func(p string) bool { return slices.Contains(capabilityProfiles, p) }) {
		m.Incomplete = "a Base Protocol claim is incomplete without a capability-profile claim (tool-interception or lifecycle-observation) and at least one transport-binding claim"
	}
	for _, p := range c.profilesInScope() {
		reqs := c.Requirements[p]
		if p == "base" {
			reqs = append(slices.Clone(reqs), "profile item 8")
		}
		for _, req := range reqs {
			row := ClaimRow{Profile: p, Requirement: req, Text: c.Texts[req]}
			for _, chk := range rules.Catalogue {
				if (req == "profile item 8" && chk.ID == string(vocab.Base8)) || requirementHas(chk.Requirement, req) {
					if judges(chk.ID, c.Role) {
						row.Checks = append(row.Checks, chk.ID)
					}
				}
			}
			cs.fill(&row)
			m.Rows = append(m.Rows, row)
		}
	}
	return m
}

func (cs *claimState) fill(row *ClaimRow) {
	var exercised, missing []string
	for _, chk := range row.Checks {
		row.Findings += cs.failures[chk]
		if row.Example == "" {
			row.Example = cs.example[chk]
		}
		if cs.exercised[chk] {
			exercised = append(exercised, chk)
		} else {
			missing = append(missing, chk)
		}
	}
	switch {
	case row.Findings > 0:
		row.Status = "failed"
	case len(row.Checks) == 0:
		row.Status = "not observable"
		row.Why = notObservable[row.Requirement]
		if row.Why == "" {
			row.Why = "no check judges the " + cs.c.Role + " on this requirement from the wire"
		}
	case len(exercised) == 0:
		row.Status = "not exercised"
		row.Why = "the traffic did not exercise " + strings.Join(missing, ", ")
	default:
		row.Status = "passed"
		if len(missing) > 0 {
			row.Why = "partly: " + strings.Join(missing, ", ") + " not exercised"
		}
		if w := notObservable[row.Requirement]; w != "" {
			row.Why = strings.TrimPrefix(row.Why+"; ", "; ") + "on the wire only: " + w
		}
	}
}

func requirementHas(list, id string) bool {
	for _, r := range strings.Split(list, ",") {
		if strings.TrimSpace(r) == id {
			return true
		}
	}
	return false
}

// WriteText renders the matrix for people.
func (m *ClaimMatrix) WriteText(w io.Writer) error {
	var b strings.Builder
	printable.Fprintf(&b, "conformance claim: role=%s binding=%s profiles=%s\n", m.Claim.Role, m.Claim.Binding, strings.Join(m.Claim.Profiles, ","))
	if m.Incomplete != "" {
		printable.Fprintf(&b, "  INCOMPLETE CLAIM: %s\n", m.Incomplete)
	}
	for _, r := range m.Rows {
		printable.Fprintf(&b, "  %-22s %-16s %-14s", r.Profile, r.Requirement, r.Status)
		if len(r.Checks) > 0 {
			printable.Fprintf(&b, " [%s]", strings.Join(r.Checks, " "))
		}
		if r.Findings > 0 {
			printable.Fprintf(&b, " %d %s, e.g. %s", r.Findings, plural(r.Findings, "finding", "findings"), r.Example)
		}
		if r.Why != "" {
			printable.Fprintf(&b, " (%s)", r.Why)
		}
		b.WriteString("\n")
	}
	printable.Fprintf(&b, "  %s\n", m.NotObservable)
	return writeAll(w, b.String())
}
