package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	plannerv1 "github.com/planner-svc/planner-svc/clients/go/gen/planner/v1"
)

// authority is a self-signed CA that issues server and client certificates for a test.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string // path of its PEM certificate
}

func newAuthority(t *testing.T, dir, name string) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+"-ca.pem")
	writePEM(t, path, "CERTIFICATE", der)
	return &authority{cert: cert, key: key, pem: path}
}

// issue writes a key and certificate signed by a and returns their paths.
func (a *authority) issue(t *testing.T, dir, name string, server bool) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "PRIVATE KEY", keyDER)
	return certPath, keyPath
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serveMutualTLS serves f with TLS that requires client certificates from ca.
func serveMutualTLS(t *testing.T, f *fakePlanner, ca *authority, certPath, keyPath string) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})))
	plannerv1.RegisterEvidencePlannerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func TestMutualTLSNeedsAClientCertificateFromTheAuthority(t *testing.T) {
	dir := t.TempDir()
	trusted := newAuthority(t, dir, "trusted")
	other := newAuthority(t, dir, "other")
	serverCert, serverKey := trusted.issue(t, dir, "server", true)
	clientCert, clientKey := trusted.issue(t, dir, "client", false)
	strangerCert, strangerKey := other.issue(t, dir, "stranger", false)
	addr := serveMutualTLS(t, &fakePlanner{plan: samplePlan()}, trusted, serverCert, serverKey)

	code, out, errOut := runCLI("-addr", addr, "-tls-ca", trusted.pem, "-tls-cert", clientCert,
		"-tls-key", clientKey, "q")
	if code != 0 || !strings.Contains(out, "hash verified: ") {
		t.Fatalf("with the client certificate: exit %d, stderr %q", code, errOut)
	}
	for name, args := range map[string][]string{
		"no client certificate": {"-tls-ca", trusted.pem},
		"another authority's":   {"-tls-ca", trusted.pem, "-tls-cert", strangerCert, "-tls-key", strangerKey},
		"plaintext":             {},
	} {
		code, _, errOut := runCLI(append(append([]string{"-addr", addr, "-timeout", "5s"}, args...), "q")...)
		if code != 3 || !strings.HasPrefix(errOut, "planner-plan: Plan failed: Unavailable: ") {
			t.Errorf("%s: exit %d, stderr %q; want 3 and Unavailable", name, code, errOut)
		}
	}
	if code, _, errOut := runCLI("-addr", addr, "-tls-cert", clientCert, "q"); code != 2 ||
		errOut != "planner-plan: -tls-cert and -tls-key must be given together\n" {
		t.Errorf("cert without key: exit %d, stderr %q", code, errOut)
	}
}
