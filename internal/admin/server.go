package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/relayq/relayq/queue"
)

// readyProbeID is looked up by StoreReady; no message ever has this ID
// (IDs are hex), so the answer is "not found" exactly when the file is
// open and readable.
const readyProbeID = "readyz-probe"

// StoreReady returns a readiness check for st: it does one read
// transaction, so it fails once the store is closed or its file is
// unreadable, and costs no disk write. It also fails once the store has
// stopped taking writes because its file is damaged.
func StoreReady(st *queue.Store) func() error {
	return func() error {
		if st == nil {
			return errors.New("no queue")
		}
		if err := st.Err(); err != nil {
			return fmt.Errorf("queue takes no writes: %w", err)
		}
		if st.Low() {
			return errors.New("the queue's disk is below its reserve: new mail is refused")
		}
		_, err := st.Get(readyProbeID)
		if err == nil || errors.Is(err, queue.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("queue unavailable: %w", err)
	}
}

// Serve runs h on l in a new goroutine and returns the server, whose
// Shutdown stops it. Connection counts are the caller's: relayq passes a
// listener wrapped in the submission server's limits. The caller listens first (net.Listen) so that a bad
// or busy address is an error at start-up, not a log line later. With
// tlsConf (admin.tls) every connection is HTTPS, so the browser rules see
// the https origin (browser.go) and the console's cookie is Secure; a
// plain HTTP request gets net/http's 400 and nothing else.
func Serve(l net.Listener, h http.Handler, tlsConf *tls.Config, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.Default()
	}
	s := &http.Server{
		Handler: h,
		// Bound slow or idle clients; /metrics and list pages are small
		// and quick, so a minute of writing is plenty.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:         tlsConf,
	}
	// Shutdown waits for requests in progress; a long poll of
	// /api/v1/events must not hold it up, so its context ends there.
	base, stop := context.WithCancel(context.Background())
	s.BaseContext = func(net.Listener) context.Context { return base }
	s.RegisterOnShutdown(stop)
	go func() {
		var err error
		if tlsConf != nil {
			err = s.ServeTLS(l, "", "") // the certificate is in TLSConfig
		} else {
			err = s.Serve(l)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin API stopped", "addr", l.Addr().String(), "err", err)
		}
	}()
	return s
}
