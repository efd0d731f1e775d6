package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// as PEM files and returns their paths and the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "tether test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// TestServeTLS runs `tether serve` with --tls-cert and --tls-key end to
// end: the login link is https, the cookie is Secure (and httpOnly), an
// https Origin is accepted on login and on the WebSocket, an http one is
// refused, and plain HTTP to the port gets nothing.
func TestServeTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	certFile, keyFile, cert := selfSigned(t)
	srvCtx, stop := context.WithCancel(ctx)
	login := make(chan string, 1)
	var errb bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		sf := &serveFlags{addr: "127.0.0.1:0", cert: certFile, key: keyFile}
		exit <- runServe(srvCtx, sf, &serve.LocalOptions{DefaultCwd: t.TempDir()}, func(u string) { login <- u }, io.Discard, &errb)
	}()
	defer func() {
		stop()
		if code := <-exit; code != 0 {
			t.Errorf("exit code %d; stderr %s", code, errb.String())
		}
	}()
	var link string
	select {
	case link = <-login:
	case <-ctx.Done():
		t.Fatalf("no login URL; stderr %s", errb.String())
	}
	u, _ := url.Parse(link)
	if u.Scheme != "https" || !strings.HasPrefix(u.Fragment, "token=") || u.RawQuery != "" {
		t.Fatalf("login URL %s: want https with the token in the fragment", link)
	}
	token := strings.TrimPrefix(u.Fragment, "token=")
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	https := "https://" + u.Host
	plain := "http://" + u.Host

	auth := func(origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", https+"/auth", strings.NewReader(`{"token":"`+token+`"}`))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// An http Origin is another site: refused, no cookie.
	if resp := auth(plain); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("login from %s: %s, cookies %v; want 403 and none", plain, resp.Status, resp.Cookies())
	}
	resp := auth(https)
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 {
		t.Fatalf("login from %s: %s, cookies %v", https, resp.Status, resp.Cookies())
	}
	cookie := resp.Cookies()[0]
	if !cookie.Secure || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %s: want Secure, HttpOnly, SameSite=Strict", resp.Header.Get("Set-Cookie"))
	}

	dial := func(origin string) (*servetest.Client, error) {
		return servetest.Dial(ctx, https, &servetest.DialOptions{HTTPClient: hc, Cookie: cookie, Header: http.Header{"Origin": {origin}}})
	}
	var de *servetest.DialError
	if c, err := dial(plain); err == nil {
		c.Close()
		t.Error("a WebSocket from an http origin was accepted")
	} else if !errors.As(err, &de) || de.StatusCode != http.StatusForbidden {
		t.Errorf("a WebSocket from an http origin: %v; want 403", err)
	}
	c, err := dial(https)
	if err != nil {
		t.Fatalf("wss with an https origin: %v", err)
	}
	defer c.Close()
	if hello, err := c.WaitFrame(ctx, nil, nil); err != nil || hello.Type != "hello" || hello.Protocol < 1 {
		t.Fatalf("first frame %+v, %v; want hello", hello, err)
	}
	c.Close()

	// A client that does not trust the certificate gets no connection;
	// plain HTTP on the port gets no page.
	if _, err := http.Get(https + "/"); err == nil {
		t.Error("an untrusted certificate was accepted")
	} else if ue := (*tls.CertificateVerificationError)(nil); !errors.As(err, &ue) {
		t.Logf("untrusted: %v", err)
	}
	if resp, err := http.Get(plain + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %s", resp.Status)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}
