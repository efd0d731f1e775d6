package cluster_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/cluster"
)

// selfSigned writes a CA-less self-signed certificate for 127.0.0.1 and
// returns the server's TLS config and the certificate's PEM file.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tether test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kder, _ := x509.MarshalECPrivateKey(key)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, file
}

// TestTLSPassedThrough: agent and client reach a TLS-only NATS server with
// the CA given by nats.RootCAs; without it the connection is refused.
func TestTLSPassedThrough(t *testing.T) {
	ctx := testCtx(t)
	cfg, ca := selfSigned(t)
	ns := newNATS(t, func(o *server.Options) { o.TLS, o.TLSConfig = true, cfg })
	newAgent(t, ns.URL(), "a1", 1, nats.RootCAs(ca))
	c := newClient(t, ns.URL(), nats.RootCAs(ca))
	if _, err := c.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL(), NATS: []nats.Option{nats.Secure()}})
	var uerr x509.UnknownAuthorityError
	if !errors.As(err, &uerr) {
		t.Fatalf("without the CA: %v", err)
	}
}
