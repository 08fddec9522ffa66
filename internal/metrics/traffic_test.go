package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A peer's method and event type never become label values beyond the
// fixed sets: a non-standard event is "other", an id is never a label.
func TestTrafficLabelsBounded(t *testing.T) {
	tr := NewTraffic()
	s := tap.NewSession(tap.SessionConfig{Config: tap.Config{Transport: tap.Stdio}, Conn: "stdio:1",
		Recorder: tr.Recorder(nil), Watch: tr})
	now := time.Now()
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":"id-secret-1","method":"hooks/intercept","params":{"event":{"id":"evt-secret","type":"tool.before"}}}` + "\n",
		`{"jsonrpc":"2.0","id":"id-secret-2","method":"hooks/intercept","params":{"event":{"id":"evt-secret-2","type":"x.custom-secret"}}}` + "\n",
		`{"jsonrpc":"2.0","id":"id-secret-3","method":"vendor/secret","params":{}}` + "\n",
	} {
		s.Stream("stdio:1", tap.FromHarness, now, []byte(line))
		answer := `{"jsonrpc":"2.0","id":"id-secret-` + string(rune('1'+i)) + `","result":{}}` + "\n"
		s.Stream("stdio:1", tap.FromBackend, now.Add(time.Millisecond), []byte(answer))
	}
	s.Lost(3)
	s.Close()
	rec := httptest.NewRecorder()
	tr.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	text := string(b)
	for _, want := range []string{
		`ahp_tap_exchanges_total{event="tool.before",method="hooks/intercept",outcome=`,
		`ahp_tap_exchanges_total{event="other",method="hooks/intercept",outcome=`,
		`ahp_tap_exchanges_total{event="none",method="other",outcome=`,
		`ahp_tap_frames_audited_total{direction="harness"} 3`,
		`ahp_tap_frames_audited_total{direction="backend"} 3`,
		`ahp_tap_audit_dropped_total 3`,
		`ahp_tap_exchange_latency_seconds_count{method="hooks/intercept"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, "secret") {
		t.Errorf("a value from a message is a label:\n%s", text)
	}
}
