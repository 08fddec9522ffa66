package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/ahp-tap/ahp-tap/rules"
	"github.com/ahp-tap/ahp-tap/tap"
)

// runRules lists every check of the catalogue and every rule of the default
// rule set: ID, check, requirement, level and one line (with --format json,
// each check's description and its entry in docs/checks.md too).
func (m *Main) runRules(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rules", flag.ContinueOnError)
	format := fs.String("format", "text", "output `FORMAT`: text or json")
	if err := parseFlags(fs, args, m.Stderr); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("rules takes no arguments")
	}
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
	if *format == "json" {
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
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tREQUIREMENT\tLEVEL\tWHAT IS CHECKED")
	for _, c := range rules.Catalogue {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, dash(c.Requirement), c.Level, c.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout)
	tw = tabwriter.NewWriter(m.Stdout, 0, 8, 2, ' ', 0)
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
