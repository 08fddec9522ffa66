package httpproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// Requests are counted by method and status, from many goroutines at once,
// through the series the metrics keep looked up: each count lands in its
// own series, none is lost.
func TestRequestsCountedBySeries(t *testing.T) {
	t.Parallel()
	m := NewMetrics(nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				m.countRequest(http.MethodPost, 200)
				m.countRequest([]string{http.MethodGet, "BREW"}[g%2], 500+i%2)
			}
		})
	}
	wg.Wait()
	text := scrape(t, m.Handler(), "/metrics")
	for _, want := range []string{
		`ahp_tap_http_requests_total{method="POST",status="200"} 400`,
		`ahp_tap_http_requests_total{method="GET",status="500"} 100`,
		`ahp_tap_http_requests_total{method="GET",status="501"} 100`,
		`ahp_tap_http_requests_total{method="other",status="500"} 100`,
		`ahp_tap_http_requests_total{method="other",status="501"} 100`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
