package api

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientTLS builds a client configuration: caFile verifies the server
// (empty = system roots), certFile/keyFile (optional) are presented as the
// client certificate.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := LoadCertPool(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("api: tls client cert: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// LoadCertPool reads the PEM certificates of file into a pool (an error
// names the file when it holds none).
func LoadCertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("api: tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("api: tls: no certificates in %s", file)
	}
	return pool, nil
}
