package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/rules"
)

func TestWriteRules(t *testing.T) {
	var text bytes.Buffer
	if err := WriteRules(&text, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CHECK  ", "RULE  ", "\nBASE-2 ", "TAP-1"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text list lacks %q", want)
		}
	}
	var js bytes.Buffer
	if err := WriteRules(&js, true); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Checks []struct{ ID, HelpURI string }
		Rules  []struct{ ID string }
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Checks) != len(rules.Catalogue) || len(doc.Rules) == 0 || doc.Checks[0].HelpURI == "" {
		t.Errorf("JSON list: %d checks (catalogue %d), %d rules", len(doc.Checks), len(rules.Catalogue), len(doc.Rules))
	}
}
