package httpproxy

import (
	"fmt"
	"net/http/httptest"
	"runtime"
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

// The relay keeps the last request target redacted for the next request to
// it; a credential learnt in between (here a bearer token that is also the
// value of an ordinary query parameter) must still be redacted from every
// later envelope: the target URL and the upstream URL of the request and
// of its response.
func TestTargetRedactedWithCredentialsLearntLater(t *testing.T) {
	const secret = "s3cr3t-value-0123456789"
	up := httptest.NewServer(okBackend())
	defer up.Close()
	tt := startTap(t, Config{Upstream: mustURL(t, up.URL+"/base")})
	c := client()
	target := tt.url + "/hooks?trace=" + secret
	post(t, c, target, []byte(interceptBody), jsonHeader())
	for tt.proxy.lastTarget.Load() == nil {
		runtime.Gosched() // until the audit has the target without the credential
	}
	hdr := jsonHeader()
	hdr.Set("Authorization", "Bearer "+secret)
	for range 2 {
		post(t, c, target, []byte(interceptBody), hdr)
	}
	tt.stop()
	frames := capturedFrames(t, tt.capPath)
	if len(frames) != 6 {
		t.Fatalf("captured %d frames, want 6", len(frames))
	}
	// The first request's envelopes were built before the token was
	// learnt; every later one after.
	for _, f := range frames[2:] {
		for _, s := range []string{f.HTTP.URL, f.HTTP.Upstream} {
			if strings.Contains(s, secret) || f.Dir == tap.FromHarness && !strings.Contains(s, tap.RedactedCredential) {
				t.Errorf("%s frame envelope URL %q, want the credential redacted", f.Dir, s)
			}
		}
	}
}
