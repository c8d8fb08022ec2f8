package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// writePair writes a fresh self-signed certificate for 127.0.0.1, named
// cn, and its key.
func writePair(t *testing.T, certFile, keyFile, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Key first, then certificate: a reload in between sees a mismatch
	// and must keep the old pair.
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServeTLSReloadsCertificate: the API serves HTTPS from the files and
// picks up a renewed pair without a restart; a broken pair keeps the old
// certificate in service.
func TestServeTLSReloadsCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair(t, certFile, keyFile, "first")
	log := slog.New(slog.DiscardHandler)
	r, err := newCertReloader(certFile, keyFile, log)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func() { mu.Lock(); now = now.Add(2 * certCheckInterval); mu.Unlock() }

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, _ *nethttp.Request) { io.WriteString(w, "ok") }),
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveUntil(ctx, hs, ln, true, 5*time.Second) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveUntil: %v", err)
		}
	}()

	served := func() string {
		t.Helper()
		c := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test reads the certificate it is shown
		conn, err := tls.Dial("tcp", ln.Addr().String(), c)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	writePair(t, certFile, keyFile, "second")
	if cn := served(); cn != "first" {
		t.Fatalf("reloaded before the check interval: %q", cn)
	}
	advance()
	if cn := served(); cn != "second" {
		t.Fatalf("after renewal served %q, want second", cn)
	}
	// A half-written renewal (garbage certificate) keeps "second".
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	advance()
	if cn := served(); cn != "second" {
		t.Fatalf("after a broken renewal served %q", cn)
	}
	if _, err := newCertReloader(certFile, keyFile, log); err == nil {
		t.Fatal("a broken pair loads at startup")
	}
}
