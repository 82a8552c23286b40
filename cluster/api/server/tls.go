package server

import (
	"crypto/tls"
	"fmt"

	"github.com/rdmablk/rdmablk/cluster/api"
)

// ServerTLS loads the API's certificate and key; with clientCA set,
// clients must present a certificate that CA signed.
func ServerTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("api server: tls: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pool, err := api.LoadCertPool(clientCA)
		if err != nil {
			return nil, err
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}
