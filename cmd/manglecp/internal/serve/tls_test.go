package serve

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
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/internal/testenv"
)

// selfSigned writes a certificate and key for 127.0.0.1 and returns their
// paths and a pool trusting the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "manglecp test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	kb, _ := x509.MarshalECPrivateKey(key)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestServeTLS: --tls-cert/--tls-key serve HTTPS with TLS 1.2 at least.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, pool := selfSigned(t)
	addr := clitest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	stderr := &testenv.Buffer{}
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), []string{"serve", "--addr", addr, "--tls-cert", certFile, "--tls-key", keyFile}, nil, &bytes.Buffer{}, stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	client := func(maxVersion uint16) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: maxVersion}}}
	}
	url := "https://" + addr + "/.well-known/manglecp/manifest.json"
	var resp *http.Response
	var err error
	for wait := testenv.NewWait(10 * time.Second); wait.Next(); {
		if resp, err = client(0).Get(url); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("HTTPS: %v\n%s", err, stderr.String())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("status %d, TLS %+v", resp.StatusCode, resp.TLS)
	}
	if _, err := client(tls.VersionTLS11).Get(url); err == nil {
		t.Error("a TLS 1.1 client was accepted")
	}
}
