package httpserve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeUntilCancelled: Serve answers until its context ends, lets a
// request under way finish, and then returns nil.
func TestServeUntilCancelled(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		WriteJSON(w, http.StatusAccepted, map[string]int{"n": 1})
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, lis, h, time.Second, slog.New(slog.DiscardHandler)) }()

	type answer struct {
		code int
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + lis.Addr().String() + "/")
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(b), err}
	}()
	<-started
	cancel() // the request is under way: it may finish
	close(release)
	a := <-answered
	if a.err != nil || a.code != http.StatusAccepted || !strings.Contains(a.body, `"n": 1`) {
		t.Errorf("the request under way got %d %q, %v", a.code, a.body, a.err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve after its context ended: %v", err)
	}
	if _, err := http.Get("http://" + lis.Addr().String() + "/"); err == nil {
		t.Error("the server still answers after Serve returned")
	}
}

// TestServeCutsOffASlowRequest: a request that outlasts the grace is cut
// off, and the stop is still clean: Serve returns nil, so that a service
// stopped with a slow client exits 0.
func TestServeCutsOffASlowRequest(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, lis, h, time.Minute, slog.New(slog.DiscardHandler)) }()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + lis.Addr().String() + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		got <- err
	}()
	<-started
	began := time.Now()
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve with a request that outlasted the grace: %v, want nil", err)
	}
	if d := time.Since(began); d < shutdownGrace {
		t.Errorf("Serve returned %v after the stop, before the grace %v", d, shutdownGrace)
	}
	if err := <-got; err != nil {
		t.Logf("the client's answer was cut off: %v", err) // any outcome will do
	}
}

// TestServeOnAClosedListener: a listener that fails is Serve's error, with
// its address.
func TestServeOnAClosedListener(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis.Close()
	err = Serve(context.Background(), lis, http.NotFoundHandler(), time.Second, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), lis.Addr().String()) {
		t.Errorf("Serve on a closed listener: %v", err)
	}
}
