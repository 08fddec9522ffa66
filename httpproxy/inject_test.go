package httpproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/inject"
)

// TestInjectOffThePath: without a plan no request is read ahead to decide
// on (the relay forwards as always); with one that selects nothing every
// request is decided and the backend's answer reaches the harness
// unchanged; with one that selects a request the harness gets the tap's
// answer and the capture says so.
func TestInjectOffThePath(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":"x","result":{"protocolVersion":"draft","effects":[]}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer up.Close()
	body := []byte(`{"jsonrpc":"2.0","id":"x","method":"hooks/capabilities","params":{"protocolVersion":"draft"}}`)
	run := func(plan *inject.Plan) (string, string) {
		tt := startTap(t, Config{Upstream: mustURL(t, up.URL), Inject: plan})
		_, got := post(t, client(), tt.url+"/agent-hooks", body, nil)
		tt.stop()
		return string(got), tt.capPath
	}
	before := injectDecisions.Load()
	if got, _ := run(nil); got != answer {
		t.Fatalf("without a plan the harness got %q", got)
	}
	if n := injectDecisions.Load() - before; n != 0 {
		t.Fatalf("%d requests decided on without a plan", n)
	}
	never, err := inject.Parse("error,id=never")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := run(inject.NewPlan([]inject.Fault{never}, "", 1)); got != answer {
		t.Errorf("a plan that selects nothing changed the answer: %q", got)
	}
	if n := injectDecisions.Load() - before; n != 1 {
		t.Errorf("%d requests decided on with a plan, want 1", n)
	}
	hit, _ := inject.Parse("error=-32050,id=x")
	got, capPath := run(inject.NewPlan([]inject.Fault{hit}, "", 1))
	if !strings.Contains(got, `"code":-32050`) {
		t.Errorf("the selected request got %q", got)
	}
	raw, err := os.ReadFile(capPath)
	if err != nil {
		t.Fatal(err)
	}
	if c := string(raw); !strings.Contains(c, `"kind":"injected"`) || !strings.Contains(c, `"kind":"swallowed"`) || !strings.Contains(c, `\"effects\":[]`) {
		t.Errorf("the capture lacks the notes or the backend's own answer:\n%s", c)
	}
}
