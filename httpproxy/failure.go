package httpproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// classify names why an upstream round trip failed, for the harness (the
// status ahp-tap answers), the metrics (a short kind) and the log (a
// sentence). Timeouts are 504; everything else is 502.
func classify(err error, headerTimeout time.Duration) (status int, kind, cause string) {
	var (
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		netErr  net.Error
		bad     badResponse
	)
	switch {
	case errors.As(err, &bad):
		return http.StatusBadGateway, "bad_response", "the upstream sent a response ahp-tap will not forward: " + err.Error()
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &host):
		return http.StatusBadGateway, "tls_verification", "the upstream's TLS certificate did not verify: " + err.Error()
	case errors.As(err, &dnsErr):
		return http.StatusBadGateway, "dns", "the upstream's host name did not resolve: " + err.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return http.StatusBadGateway, "refused", "the upstream refused the connection: " + err.Error()
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return http.StatusBadGateway, "reset", "the upstream reset the connection: " + err.Error()
	case errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusGatewayTimeout, "timeout", "the upstream did not answer within " + headerTimeout.String() + ": " + err.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadGateway, "closed", "the upstream closed the connection without answering: " + err.Error()
	}
	return http.StatusBadGateway, "other", "the upstream could not be reached: " + err.Error()
}
