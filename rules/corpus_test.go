package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// sharedAHP is the upstream reference data, beside the repository.
const sharedAHP = "../../shared/ahp"

type corpusCase struct {
	ID                      string          `json:"id"`
	Path                    string          `json:"path"`
	Binding                 string          `json:"binding"`
	ExpectedValid           *bool           `json:"expectedValid"`
	AggregateExpectedValid  *bool           `json:"aggregateExpectedValid"`
	ContextualExpectedValid *bool           `json:"contextualExpectedValid"`
	EditContext             json.RawMessage `json:"editContext"`
	Requirements            []string        `json:"requirements"`
}

// verdict follows ../shared/ahp/README.md: contextualExpectedValid with an
// editContext, else aggregateExpectedValid, else expectedValid.
func (c corpusCase) verdict() bool {
	switch {
	case c.EditContext != nil && c.ContextualExpectedValid != nil:
		return *c.ContextualExpectedValid
	case c.AggregateExpectedValid != nil:
		return *c.AggregateExpectedValid
	}
	return *c.ExpectedValid
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedAHP, "fixtures/draft/manifest.json"))
	if err != nil {
		t.Skipf("no shared AHP corpus: %v", err)
	}
	var m struct{ Cases []corpusCase }
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m.Cases
}

// TestCorpus checks every case of the upstream fixture manifest: an invalid
// case gives an error finding, a valid one no error or warn finding.
func TestCorpus(t *testing.T) {
	for _, c := range loadCorpus(t) {
		t.Run(c.ID, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(sharedAHP, c.Path))
			if err != nil {
				t.Fatal(err)
			}
			cfg := tap.Config{}
			if c.EditContext != nil {
				cfg.EditContext, _, _ = tap.ParseJSON(c.EditContext)
			}
			fs := CheckDocument(c.Path, data, cfg, Options{})
			var bad []string
			errs := 0
			for _, f := range fs {
				if f.Level >= tap.Warn {
					bad = append(bad, f.String())
				}
				if f.Level == tap.Error {
					errs++
				}
			}
			want := c.verdict()
			if want && len(bad) > 0 {
				t.Errorf("valid case %s (%v) got findings:\n  %s", c.ID, c.Requirements, strings.Join(bad, "\n  "))
			}
			if !want && errs == 0 {
				t.Errorf("invalid case %s (%v) got no error finding; findings: %v", c.ID, c.Requirements, fs)
			}
		})
	}
}
