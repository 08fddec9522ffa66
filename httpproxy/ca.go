package httpproxy

import (
	"container/list"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Files of a MITM CA directory made by InitCA.
const (
	CACertFile = "ahp-tap-ca.pem"
	CAKeyFile  = "ahp-tap-ca-key.pem"
)

// CAValidity is how long a CA made by InitCA is valid.
const CAValidity = 365 * 24 * time.Hour

// InitCA creates a new CA for HTTPS interception in dir (created 0700 if
// missing): a certificate and an ECDSA P-256 private key, both written
// 0600. It never overwrites an existing CA. It returns the certificate's
// path, the file a user installs as trusted.
func InitCA(dir string, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("%s already exists; ahp-tap never overwrites a CA (remove it first)", p)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:   fmt.Sprintf("ahp-tap interception CA (%s, %s)", host, now.UTC().Format("2006-01-02")),
			Organization: []string{"ahp-tap local interception CA"},
		},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", err
	}
	// The key first: a certificate without its key is useless, a key
	// without its certificate is at least not trusted anywhere.
	if err := writeNew(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})); err != nil {
		return "", err
	}
	if err := writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return "", err
	}
	return certPath, nil
}

func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// LoadCA reads the CA InitCA made in dir. It refuses a private key that
// others than its owner can read.
func LoadCA(dir string) (*tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	st, err := os.Stat(keyPath)
	if err != nil {
		return nil, fmt.Errorf("no CA in %s (run 'ahp-tap ca init %s'): %w", dir, dir, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v); it must be 0600", keyPath, st.Mode().Perm())
	}
	ca, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if ca.Leaf == nil {
		if ca.Leaf, err = x509.ParseCertificate(ca.Certificate[0]); err != nil {
			return nil, err
		}
	}
	if !ca.Leaf.IsCA {
		return nil, errors.New(certPath + " is not a CA certificate")
	}
	return &ca, nil
}

// certCacheSize bounds the leaf certificates kept for intercepted hosts
// (about 20 KiB each with the goroutine-free tls.Certificate): 20,000 host
// names used to hold 391 MiB (issue 8 item 9).
const certCacheSize = 1024

// certStore caches the leaf certificates signed for intercepted hosts
// (goproxy.CertStorage): a least-recently-used cache of certCacheSize
// entries, so that a harness naming ever new hosts costs a signature per
// host, never unbounded memory.
type certStore struct {
	mu   sync.Mutex               // guards m and lru
	m    map[string]*list.Element // host -> element of lru holding a *certEntry
	lru  list.List                // most recently used first
	size int                      // capacity (0: certCacheSize)
}

type certEntry struct {
	host string
	cert *tls.Certificate
}

// Fetch implements goproxy.CertStorage.
func (s *certStore) Fetch(host string, gen func() (*tls.Certificate, error)) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[host]; ok {
		s.lru.MoveToFront(e)
		return e.Value.(*certEntry).cert, nil
	}
	c, err := gen()
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = make(map[string]*list.Element)
	}
	s.m[host] = s.lru.PushFront(&certEntry{host: host, cert: c})
	size := s.size
	if size <= 0 {
		size = certCacheSize
	}
	for s.lru.Len() > size {
		old := s.lru.Back()
		s.lru.Remove(old)
		delete(s.m, old.Value.(*certEntry).host)
	}
	return c, nil
}

// Len returns how many certificates are cached.
func (s *certStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}
