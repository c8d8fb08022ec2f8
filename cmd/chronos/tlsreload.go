package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certCheckInterval is how often, at most, a TLS handshake looks whether
// the certificate files changed.
const certCheckInterval = time.Second

// certReloader serves the API's certificate from TLS_CERT_FILE and
// TLS_KEY_FILE and picks up new files (a renewal by cert-manager, certbot,
// ...) without a restart: a handshake at most once per certCheckInterval
// compares the files' size and modification time with those loaded and
// reloads when they differ. A pair that fails to load (half written, key
// not matching) is logged and the previous certificate stays in service.
// It needs no goroutine: the handshakes drive it.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	stamp     string // size and mtime of both files when cert was loaded
	checked   time.Time
	lastError string
}

// newCertReloader loads the pair once; an error here stops startup.
func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	stamp, err := r.fileStamp()
	if err == nil {
		err = r.load(stamp)
	}
	if err != nil {
		return nil, err
	}
	r.checked = r.now()
	return r, nil
}

// fileStamp identifies the current contents of both files cheaply.
func (r *certReloader) fileStamp() (string, error) {
	var s string
	for _, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}

func (r *certReloader) load(stamp string) error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS_CERT_FILE %q and TLS_KEY_FILE %q: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.stamp = &c, stamp
	return nil
}

// GetCertificate is the tls.Config hook.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= certCheckInterval {
		r.checked = now
		r.maybeReload()
	}
	return r.cert, nil
}

// maybeReload reloads when the files changed; r.mu is held.
func (r *certReloader) maybeReload() {
	stamp, err := r.fileStamp()
	if err == nil && stamp == r.stamp {
		return
	}
	if err == nil {
		err = r.load(stamp)
	}
	if err != nil {
		// Logged once per distinct failure, not on every handshake.
		if msg := err.Error(); msg != r.lastError {
			r.lastError = msg
			r.log.Error("TLS certificate reload failed; keeping the previous certificate", "err", msg)
		}
		return
	}
	r.lastError = ""
	r.log.Info("TLS certificate reloaded", "cert_file", r.certFile, "not_after", r.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
}
