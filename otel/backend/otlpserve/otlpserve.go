// Package otlpserve runs the two servers of an OTLP receiver, gRPC and
// HTTP, and reads OTLP/HTTP request bodies: what the service map's receiver
// (otel/servicemap) and the metrics sink (otel/metricsink) share. It is meant
// for loopback: tests, the demo, `northpole servicemap`.
package otlpserve

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// Servers are a receiver's OTLP/gRPC and OTLP/HTTP servers.
type Servers struct {
	grpcLis, httpLis net.Listener
	grpcSrv          *grpc.Server
	httpSrv          *http.Server
	wg               sync.WaitGroup
}

// Start serves OTLP/gRPC on grpcAddr, with the services register adds, and
// OTLP/HTTP on httpAddr with handler; an empty address leaves that protocol
// off, but not both. ":0"-style addresses pick a free port (GRPCAddr,
// HTTPAddr). name prefixes errors and log lines; a nil log discards.
func Start(name, grpcAddr, httpAddr string, register func(*grpc.Server), handler http.Handler, log *slog.Logger) (*Servers, error) {
	if grpcAddr == "" && httpAddr == "" {
		return nil, fmt.Errorf("%s: no address to receive OTLP on", name)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Servers{}
	if grpcAddr != "" {
		lis, err := net.Listen("tcp", grpcAddr)
		if err != nil {
			return nil, fmt.Errorf("%s: OTLP/gRPC listen on %s: %w", name, grpcAddr, err)
		}
		s.grpcLis, s.grpcSrv = lis, grpc.NewServer()
		register(s.grpcSrv)
		s.wg.Go(func() {
			if err := s.grpcSrv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				log.Error(name+": OTLP/gRPC server stopped", "err", err)
			}
		})
	}
	if httpAddr != "" {
		lis, err := net.Listen("tcp", httpAddr)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: OTLP/HTTP listen on %s: %w", name, httpAddr, err)
		}
		s.httpLis, s.httpSrv = lis, &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		s.wg.Go(func() {
			if err := s.httpSrv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error(name+": OTLP/HTTP server stopped", "err", err)
			}
		})
	}
	return s, nil
}

// GRPCAddr is the gRPC listen address ("" when off).
func (s *Servers) GRPCAddr() string { return addrOf(s.grpcLis) }

// HTTPAddr is the HTTP listen address ("" when off).
func (s *Servers) HTTPAddr() string { return addrOf(s.httpLis) }

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// closeWait bounds how long Close waits for requests in flight.
const closeWait = 5 * time.Second

// Close stops both servers, waiting briefly for requests in flight.
func (s *Servers) Close() {
	if s.grpcSrv != nil {
		done := make(chan struct{})
		go func() { s.grpcSrv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeWait):
			s.grpcSrv.Stop()
		}
	}
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		_ = s.httpSrv.Shutdown(ctx)
		cancel()
	}
	s.wg.Wait()
}

// maxBody bounds one OTLP/HTTP request.
const maxBody = 64 << 20

// ReadBody reads an OTLP/HTTP request's body, gzip or not, of at most
// 64 MiB; when it cannot, it has answered 400 and returns false.
func ReadBody(w http.ResponseWriter, req *http.Request) ([]byte, bool) {
	var body io.Reader = http.MaxBytesReader(w, req.Body, maxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "bad gzip body: "+err.Error(), http.StatusBadRequest)
			return nil, false
		}
		defer gz.Close()
		body = io.LimitReader(gz, maxBody)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return data, true
}
