package httptap

import (
	"os"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/httpproxy"
	"github.com/ahp-tap/ahp-tap/wrap"
)

func TestParseRoutes(t *testing.T) {
	const a, b = "hook=a,listen=127.0.0.1:1,upstream=http://x/,log=a.log", "hook=b,listen=127.0.0.1:2,upstream=http://y/,log=b.log"
	for _, c := range []struct {
		values       []string
		reg, conduct string
		want         string // "" for accepted
	}{
		{[]string{a, b}, "reg.json", "", ""},
		{[]string{"listen=127.0.0.1:1,upstream=http://x/"}, "reg.json", "", "give hook=ID"},
		{[]string{"listen=127.0.0.1:1,upstream=http://x/"}, "", "dir", "--conduct needs --registration and hook="},
		{[]string{a}, "", "", "hook= needs --registration"},
		{[]string{a, strings.Replace(b, "hook=b", "hook=a", 1)}, "reg.json", "", `hook "a" has two routes`},
		{[]string{a, strings.Replace(b, "b.log", "a.log", 1)}, "reg.json", "", "a.log is given to two routes"},
	} {
		routes, err := ParseRoutes(c.values, c.reg, c.conduct)
		switch {
		case c.want == "" && (err != nil || len(routes) != len(c.values)):
			t.Errorf("ParseRoutes(%q) = %v, %v; want every route", c.values, routes, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("ParseRoutes(%q) = %v, want %q", c.values, err, c.want)
		}
	}
}

func TestUpstreamsNeverQuoteCredentials(t *testing.T) {
	ups, err := Upstreams([]wrap.Route{{Upstream: "https://p.example/base"}, {}}, false)
	if err != nil || ups[0].Host != "p.example" || ups[1] != nil {
		t.Fatalf("Upstreams = %v, %v", ups, err)
	}
	for _, u := range []string{"ftp://x/", "https://user:s3cret@p.example/", "ftp://x/?access_token=s3cret"} {
		_, err := Upstreams([]wrap.Route{{Listen: "127.0.0.1:1", Upstream: u}}, true)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "--route on 127.0.0.1:1: upstream") {
			t.Errorf("Upstreams(%q) = %v, want refused without the credential", u, err)
		}
	}
}

func TestTrustRefusesWhatIsNotACA(t *testing.T) {
	var cfg httpproxy.Config
	if err := Trust(&cfg, "", ""); err != nil || cfg.RootCAs != nil || cfg.MITMCA != nil {
		t.Errorf("Trust without files = %v, %+v", err, cfg)
	}
	notPEM := t.TempDir() + "/ca.pem"
	if err := writeFile(notPEM, "not a certificate"); err != nil {
		t.Fatal(err)
	}
	if err := Trust(&cfg, notPEM, ""); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("Trust(not PEM) = %v", err)
	}
	if err := Trust(&cfg, "", t.TempDir()+"/none"); err == nil || !strings.Contains(err.Error(), "http: --mitm-ca: ") {
		t.Errorf("Trust(no CA dir) = %v", err)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
