package otlpexport

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ahp-tap/ahp-tap/httpaudit"
)

// Signals ahp-tap exports, by the name the OTEL_* variables use.
const (
	signalLogs    = "LOGS"
	signalTraces  = "TRACES"
	signalMetrics = "METRICS"
)

// signalOn reports whether the environment leaves signal on:
// OTEL_SDK_DISABLED=true turns every signal off, OTEL_<SIGNAL>_EXPORTER=none
// (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER, OTEL_LOGS_EXPORTER) one.
func signalOn(signal string) bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	for _, v := range strings.Split(os.Getenv("OTEL_"+signal+"_EXPORTER"), ",") {
		if strings.EqualFold(strings.TrimSpace(v), "none") {
			return false
		}
	}
	return true
}

// signalEnv returns OTEL_EXPORTER_OTLP_<SIGNAL>_<name>, else
// OTEL_EXPORTER_OTLP_<name>.
func signalEnv(signal, name string) string {
	if v := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_" + name); v != "" {
		return v
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_" + name)
}

// signalURL is where signal goes: the --otlp-endpoint base URL with the
// signal's path (a URL without a path gets /v1/<signal>; one ending in
// /v1/logs, the logs URL, has its siblings beside it), else
// OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/<signal> appended. "" when none.
func signalURL(endpoint, signal string) (string, error) {
	path := "/v1/" + strings.ToLower(signal)
	if endpoint == "" {
		if v := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"); v != "" {
			return checkURL(v)
		}
		endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if endpoint == "" {
			return "", nil
		}
		u, err := parseURL(endpoint)
		if err != nil {
			return "", err
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + path
		return u.String(), nil
	}
	u, err := parseURL(endpoint)
	if err != nil {
		return "", err
	}
	switch {
	case u.Path == "" || u.Path == "/":
		u.Path = path
	case strings.HasSuffix(u.Path, "/v1/logs"):
		u.Path = strings.TrimSuffix(u.Path, "/v1/logs") + path
	case signal == signalLogs:
		// a full logs URL, as before
	default:
		u.Path = strings.TrimSuffix(u.Path, "/") + path
	}
	return u.String(), nil
}

func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q is not an absolute http:// or https:// URL", httpaudit.URL(s))
	}
	return u, nil
}

func checkURL(s string) (string, error) {
	u, err := parseURL(s)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// A client posts OTLP/HTTP protobuf requests of one signal, with the
// headers, compression and certificates the OTEL_EXPORTER_OTLP_* variables
// give.
type client struct {
	url     string
	target  string // url for people: credentials redacted
	headers http.Header
	gzip    bool
	http    *http.Client
	secrets httpaudit.Builder // the URL's and headers' credentials, redacted from diagnostics
}

func newClient(rawURL, signal string) (*client, error) {
	c := &client{url: rawURL, target: httpaudit.URL(rawURL), headers: http.Header{}}
	if u, err := url.Parse(rawURL); err == nil {
		c.secrets.AddURL(u)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_" + signal + "_HEADERS"} {
		for _, kv := range strings.Split(os.Getenv(name), ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				continue
			}
			if dv, err := url.QueryUnescape(strings.TrimSpace(v)); err == nil {
				v = dv
			}
			c.headers.Set(k, strings.TrimSpace(v))
		}
	}
	// Header values never reach an error of net/http; an Authorization
	// credential is remembered all the same.
	c.secrets.Add(c.headers)
	c.gzip = strings.EqualFold(strings.TrimSpace(signalEnv(signal, "COMPRESSION")), "gzip")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a collector is reached directly, as the SDK's exporters do by default
	var tc tls.Config
	if ca := signalEnv(signal, "CERTIFICATE"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTLP certificate: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTLP certificate %s holds no PEM certificate", ca)
		}
		tc.RootCAs = pool
	}
	if cert, key := signalEnv(signal, "CLIENT_CERTIFICATE"), signalEnv(signal, "CLIENT_KEY"); cert != "" && key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTLP client certificate: %v", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tr.TLSClientConfig = &tc
	c.http = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return c, nil
}

// post sends msg and decodes the answer into resp (may be nil). Any
// answer but 2xx is an error; the error never holds a credential.
func (c *client) post(ctx context.Context, msg, resp proto.Message) error {
	body, err := proto.Marshal(msg)
	if err != nil {
		return err
	}
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return errors.New(c.secrets.Text(err.Error()))
	}
	for k, vs := range c.headers {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	r, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return errors.New("no answer in time")
		}
		return errors.New(c.secrets.Text(err.Error()))
	}
	defer r.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if r.StatusCode/100 != 2 {
		return fmt.Errorf("the collector answered %s", r.Status)
	}
	if resp != nil && len(data) > 0 {
		_ = proto.Unmarshal(data, resp) // a partial success, when it says one
	}
	return nil
}
