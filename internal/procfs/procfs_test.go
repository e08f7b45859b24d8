package procfs

import (
	"errors"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

func needProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no /proc/net/tcp: the bench finds the broker there")
		}
		t.Skip("no /proc/net/tcp (env gate: CI=true makes this a failure)")
	}
}

// TestListenerPIDsFindsThisProcess: a listener this test opens is found as
// this process, on IPv4 and (where the host has it) IPv6 loopback; a port
// nobody listens on and an address of another host are not.
func TestListenerPIDsFindsThisProcess(t *testing.T) {
	needProc(t)
	for _, network := range []struct{ net, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		l, err := net.Listen(network.net, network.addr)
		if err != nil {
			if network.net == "tcp6" {
				t.Logf("no IPv6 loopback here: %v", err)
				continue
			}
			t.Fatal(err)
		}
		addr := l.Addr().String()
		pids, err := ListenerPIDs(addr)
		if err != nil || !slices.Equal(pids, []int{os.Getpid()}) {
			t.Errorf("ListenerPIDs(%s) = %v, %v; want [%d] (this process)", addr, pids, err, os.Getpid())
		}
		l.Close()
		if pids, err := ListenerPIDs(addr); err == nil {
			t.Errorf("ListenerPIDs(%s) after closing the listener = %v, want an error", addr, pids)
		}
	}
	// 192.0.2.0/24 is TEST-NET-1: never an address of this host.
	if pids, err := ListenerPIDs("192.0.2.1:9092"); !errors.Is(err, ErrNotLocal) {
		t.Errorf("ListenerPIDs of a remote address = %v, %v; want ErrNotLocal", pids, err)
	}
}

func TestParseProcAddr(t *testing.T) {
	// The words of /proc/net/tcp are in the host's byte order; these are
	// little-endian, as on every machine the bench runs on.
	for _, tc := range []struct {
		in   string
		ip   string
		port uint16
	}{
		{"0100007F:4A64", "127.0.0.1", 19044},
		{"00000000:0050", "0.0.0.0", 80},
		{"00000000000000000000000001000000:1F90", "::1", 8080},
		{"0000000000000000FFFF00000100007F:0BB8", "127.0.0.1", 3000}, // v4-mapped
	} {
		ip, port, err := parseProcAddr(tc.in)
		if err != nil || !ip.Equal(net.ParseIP(tc.ip)) || port != tc.port {
			t.Errorf("parseProcAddr(%q) = %v, %d, %v; want %s, %d", tc.in, ip, port, err, tc.ip, tc.port)
		}
	}
	for _, bad := range []string{"0100007F", "0100007:0050", "zz00007F:0050", "0100007F:zz"} {
		if _, _, err := parseProcAddr(bad); err == nil {
			t.Errorf("parseProcAddr(%q) accepted", bad)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	rest := " S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0 100"
	for _, tc := range []struct {
		stat string
		want time.Duration
	}{
		{"1234 (java)" + rest, 3 * time.Second},
		{"1234 (a (b) c)" + rest, 3 * time.Second}, // a command name with spaces and parentheses
	} {
		got, err := parseStatCPU(tc.stat)
		if err != nil || got != tc.want {
			t.Errorf("parseStatCPU(%q) = %v, %v; want %v", tc.stat, got, err, tc.want)
		}
	}
	for _, bad := range []string{"1234 java S 1", "1234 (java) S 1 2 3", "1234 (java) S 1 2 3 4 5 6 7 8 9 10 x 50 0"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) accepted", bad)
		}
	}
}

// TestProcCPUGrows: this process's CPU time, read from /proc and from
// getrusage, grows while it computes.
func TestProcCPUGrows(t *testing.T) {
	needProc(t)
	if _, err := CPU(-1); err == nil {
		t.Error("CPU(-1) accepted")
	}
	p0, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	s0, err := SelfCPU()
	if err != nil {
		t.Fatal(err)
	}
	x := 1
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		for i := range 1_000_000 {
			x = x*31 + i
		}
		p1, err1 := CPU(os.Getpid())
		s1, err2 := SelfCPU()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if p1 > p0 && s1 > s0 {
			return
		}
	}
	t.Errorf("CPU time did not grow while computing (%d)", x)
}

// TestRSS: this process has a resident set and a peak no smaller, the peak
// can be reset, and a process that does not exist has neither.
func TestRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no /proc: the bench reads RSS there")
		}
		t.Skip("no /proc (env gate: CI=true makes this a failure)")
	}
	if err := ResetPeakRSS(os.Getpid()); err != nil {
		t.Error(err)
	}
	rss, peak := RSSMiB(os.Getpid()), PeakRSSMiB(os.Getpid())
	if rss <= 0 || peak < rss {
		t.Errorf("this process: RSS %v MiB, peak %v MiB", rss, peak)
	}
	if rss, peak := RSSMiB(-1), PeakRSSMiB(-1); rss != 0 || peak != 0 {
		t.Errorf("no process: RSS %v, peak %v; want 0", rss, peak)
	}
	if err := ResetPeakRSS(-1); err == nil {
		t.Error("ResetPeakRSS(-1) accepted")
	}
}
