// Package httpserve runs a component's HTTP server for as long as the
// component runs: the bounds a server of small GET requests needs, and a stop
// that lets the requests under way finish (Serve). The sleigh serves its
// manifest with it, the packer its health.
//
// WriteJSON writes the small answers whole: both components' /healthz and the
// sleigh's /manifest/summary. The manifest's pages are not built here: the
// sleigh streams each one as it reads it (processors/sleigh, writePage).
package httpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The server's bounds other than a response's: a request is a GET without a
// body, so its header and the whole request are read quickly or not at all,
// and idle keep-alive connections close after a minute.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	// shutdownGrace is how long requests under way may finish once Serve's
	// context ends.
	shutdownGrace = 3 * time.Second
)

// Serve answers h's requests on lis until ctx ends, then lets the requests
// under way finish for a few seconds and cuts the rest off: a stop asked
// for is a clean stop (nil) even when a slow client was cut off, which is
// logged. It returns an error only when serving itself failed. writeTimeout
// bounds the time from the end of a request's header to the end of its
// response. The server's own errors (a client that hung up, say) go to log
// as warnings.
func Serve(ctx context.Context, lis net.Listener, h http.Handler, writeTimeout time.Duration, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve HTTP on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// The grace is over: cut the rest off. Their clients see the
		// response end early; the stop itself went as asked.
		log.Warn("stopped serving HTTP with requests still under way: cut off", "addr", lis.Addr(), "grace", shutdownGrace)
		err = nil
	}
	if err != nil || sctx.Err() != nil {
		_ = srv.Close()
	}
	if serr := <-served; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("stop serving HTTP on %s: %w", lis.Addr(), err)
	}
	return nil
}

// WriteJSON writes v as indented JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the status is out: a client that hung up is no one's error
}
