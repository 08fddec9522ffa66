package httpproxy

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// Past MaxCredentials the proxy forgets the oldest credential and the audit
// says so, once (TAP-1).
func TestForgettingCredentialsIsReported(t *testing.T) {
	up := httptest.NewServer(okBackend())
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL), MaxCredentials: 2})
	c := client()
	for i := range 4 {
		hdr := jsonHeader()
		hdr.Set("Authorization", fmt.Sprintf("Bearer token-number-%04d", i))
		post(t, c, tt.url+"/", []byte(interceptBody), hdr)
	}
	tt.stop()
	var forgot []tap.Finding
	for _, f := range tt.found.withCheck("TAP-1") {
		if strings.Contains(f.Message, "at most 2 credentials") {
			forgot = append(forgot, f)
		}
	}
	if len(forgot) != 1 {
		t.Errorf("TAP-1 findings about forgotten credentials = %d, want 1:%s", len(forgot), tt.found.dump())
	}
}
