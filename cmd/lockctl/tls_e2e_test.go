package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lock/internal/testing/redistest"
	"github.com/lockkit/lock/internal/testing/testserver"
)

// rediss:// URLs verify the server against ca=, present cert= and key=,
// and refuse a server they cannot verify.
func TestTLS(t *testing.T) {
	path := testserver.LookPath(t, "redis-server", redistest.Install)
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", ca, caKey)
	newCert(t, dir, "client", ca, caKey)
	port := testserver.FreePort(t)
	testserver.Start(t, "redis-server tls :"+strconv.Itoa(port), path, []string{
		"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", filepath.Join(dir, "server.pem"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "yes",
		"--save", "", "--appendonly", "no", "--dir", dir,
	}, port, dir)

	base := "rediss://127.0.0.1:" + strconv.Itoa(port)
	caParam := "ca=" + filepath.Join(dir, "ca.pem")
	certParams := "cert=" + filepath.Join(dir, "client.pem") + "&key=" + filepath.Join(dir, "client.key")
	for _, tc := range []struct {
		query string
		code  int
		err   string
	}{
		{caParam + "&" + certParams, 0, ""},
		{certParams + "&insecure=true", 0, ""},
		{certParams, exitFailure, "certificate signed by unknown authority"},
		{caParam, exitFailure, "127.0.0.1:" + strconv.Itoa(port)}, // the server wants a client certificate
	} {
		url := base + "?" + tc.query
		code, stdout, stderr := lockctl(t, nil, "run", "--store", url, "tls", "--", "true")
		if code != tc.code || !strings.Contains(stderr, tc.err) {
			t.Errorf("run --store %s: exit %d, stdout %q, stderr %q; want %d and %q", url, code, stdout, stderr, tc.code, tc.err)
		}
		if testing.Verbose() {
			t.Logf("%s: %d %s", tc.query, code, stderr)
		}
	}
}

// newCert writes name.pem and name.key in dir: a CA if parent is nil,
// otherwise a certificate for 127.0.0.1 signed by parent.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "lockctl test " + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, kind string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".pem", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
