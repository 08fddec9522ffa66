package report

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// The summary names the earlier draft states the findings matched (issue
// 12), once each, and says nothing when none did.
func TestSummaryOlderDraftLine(t *testing.T) {
	var c Collector
	c.Write(tap.Finding{Check: "EVT-1", Level: tap.Error, Message: "m", OlderDraft: "the 0.1 revision"})
	c.Write(tap.Finding{Check: "EVT-1", Level: tap.Error, Message: "m", OlderDraft: "the 0.1 revision"})
	c.Write(tap.Finding{Check: "EDIT-2", Level: tap.Error, Message: "m", OlderDraft: "the draft before canonical inline messages"})
	var b strings.Builder
	if err := c.Summary().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "  older draft: some findings match shapes of the 0.1 revision and of the draft before canonical inline messages; an SDK may pin an older schema revision\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary = %q, want a line %q", b.String(), want)
	}
	if got := c.Summary().OlderDrafts; len(got) != 2 {
		t.Errorf("Summary().OlderDrafts = %q, want two states", got)
	}

	var plain Collector
	plain.Write(tap.Finding{Check: "EVT-1", Level: tap.Error, Message: "m"})
	b.Reset()
	if err := plain.Summary().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "older draft") {
		t.Errorf("summary without old shapes = %q, want no older-draft line", b.String())
	}
}
