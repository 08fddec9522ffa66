package httptap

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"os"

	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/httpproxy"
	"github.com/ahp-tap/ahp-tap/wrap"
)

// ParseRoutes reads the --route values: each is one link, and each needs
// a hook of registration (the --registration file, "" for none), and a
// hook with --conduct (conductDir). Its errors are one line each, never
// quoting a value (an upstream may carry credentials).
func ParseRoutes(values []string, registration, conductDir string) ([]wrap.Route, error) {
	var routes []wrap.Route
	hooks, files := map[string]bool{}, map[string]bool{}
	for _, v := range values {
		r, err := wrap.ParseRoute(v) // its errors never quote v: an upstream may carry credentials
		if err != nil {
			return nil, fmt.Errorf("http: --route: %v", err)
		}
		switch {
		case r.Hook == "" && registration != "":
			return nil, fmt.Errorf("http: --route on %s: give hook=ID, the registration's hook this route is", r.Listen)
		case r.Hook == "" && conductDir != "":
			return nil, fmt.Errorf("http: --conduct needs --registration and hook= in each route: the conduct timeline places each link by its hook")
		case r.Hook != "" && registration == "":
			return nil, fmt.Errorf("http: --route on %s: hook= needs --registration", r.Listen)
		case hooks[r.Hook] && r.Hook != "":
			return nil, fmt.Errorf("http: --route: hook %q has two routes", r.Hook)
		}
		hooks[r.Hook] = true
		for _, p := range []string{r.Log, r.Capture} {
			if p != "" && p != "-" && files[p] {
				return nil, fmt.Errorf("http: --route: %s is given to two routes; each route writes its own log and capture", p)
			}
			files[p] = true
		}
		routes = append(routes, r)
	}
	return routes, nil
}

// Upstreams reads each route's upstream (a nil entry for a route without
// one: --forward). named says the routes come from --route, for the
// errors' wording.
func Upstreams(routes []wrap.Route, named bool) ([]*url.URL, error) {
	ups := make([]*url.URL, len(routes))
	for i, r := range routes {
		if r.Upstream == "" {
			continue // --forward
		}
		what := "--upstream"
		if named {
			what = "--route on " + r.Listen + ": upstream"
		}
		u, err := url.Parse(r.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("http: %s %q is not an absolute http:// or https:// URL", what, httpaudit.URL(r.Upstream)) // credentials redacted
		}
		if u.User != nil {
			return nil, fmt.Errorf("http: %s must not carry credentials; the harness sends its own Authorization header", what)
		}
		ups[i] = u
	}
	return ups, nil
}

// Trust sets cfg's pool of upstream CAs from the PEM file upstreamCA and
// its interception CA from the directory mitmCA ("": none each).
func Trust(cfg *httpproxy.Config, upstreamCA, mitmCA string) error {
	if upstreamCA != "" {
		pem, err := os.ReadFile(upstreamCA)
		if err != nil {
			return fmt.Errorf("http: --upstream-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("http: --upstream-ca %s holds no PEM certificate", upstreamCA)
		}
		cfg.RootCAs = pool
	}
	if mitmCA != "" {
		ca, err := httpproxy.LoadCA(mitmCA)
		if err != nil {
			return fmt.Errorf("http: --mitm-ca: %v", err)
		}
		cfg.MITMCA = ca
	}
	return nil
}
