package report

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// WriteRules lists every check of the catalogue and every rule of the
// default rule set (with the rules --spec and the conduct timeline report
// under): ID, check, requirement, level and one line, as text tables or,
// with asJSON, one JSON document with each check's description and its
// entry in docs/checks.md too (`ahp-tap rules`).
func WriteRules(w io.Writer, asJSON bool) error {
	var ruleInfos []tap.RuleInfo
	for _, r := range rules.Default(rules.Options{}) {
		ruleInfos = append(ruleInfos, r.Info())
	}
	ruleInfos = append(ruleInfos, tap.TapIncomplete, tap.TapInternal)
	// With --spec DIR, schema failures report under these rules.
	ruleInfos = append(ruleInfos, rules.SpecRuleInfos()...)
	// Across the links of a registration, the conduct timeline reports
	// under these.
	ruleInfos = append(ruleInfos, rules.ConductRuleInfos()...)
	if asJSON {
		type check struct {
			ID          string    `json:"id"`
			Requirement string    `json:"requirement"`
			Level       tap.Level `json:"level"`
			Summary     string    `json:"summary"`
			Description string    `json:"description"`
			HelpURI     string    `json:"helpUri"`
		}
		doc := struct {
			Checks []check        `json:"checks"`
			Rules  []tap.RuleInfo `json:"rules"`
		}{Rules: ruleInfos}
		for _, c := range rules.Catalogue {
			doc.Checks = append(doc.Checks, check{c.ID, c.Requirement, c.Level, c.Summary, c.Description, rules.CheckHelpURI(c.ID)})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tREQUIREMENT\tLEVEL\tWHAT IS CHECKED")
	for _, c := range rules.Catalogue {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, dash(c.Requirement), c.Level, c.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tCHECK\tLEVEL\tWHAT IT LOOKS AT")
	for _, r := range ruleInfos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Check, r.Level, r.Summary)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
