package httpproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func scrape(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	return string(b)
}

// Series exist at zero from the start, a harness hang-up is not an
// upstream failure, and build, process and Go runtime metrics are there
// (issue 15 item 11).
func TestMetricsSeries(t *testing.T) {
	t.Parallel()
	m := NewMetrics(func() uint64 { return 0 })
	m.ZeroFindings([]string{"BASE-2"})
	m.countFailure("harness_gone")
	m.countFailure("refused")
	text := scrape(t, m.Handler(), "/metrics")
	for _, want := range []string{
		`ahp_tap_upstream_failures_total{cause="timeout"} 0`,
		`ahp_tap_upstream_failures_total{cause="refused"} 1`,
		`ahp_tap_findings_total{check="BASE-2",level="error"} 0`,
		`ahp_tap_harness_gone_total 1`,
		`ahp_tap_build_info{goversion="go`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, `cause="harness_gone"`) {
		t.Error("a harness hang-up is counted as an upstream failure")
	}
	if got := scrape(t, m.HealthHandler(), "/healthz"); got != "ok\n" {
		t.Errorf("health = %q", got)
	}
}
