// Package procfs reads what northpole's measurements need of other
// processes from Linux's /proc: their CPU time, their resident set and its
// peak, and which process listens on a TCP address of this host (a broker
// whose CPU the bench measures).
package procfs

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNotLocal: the address is not one of this host's, so its listener is
// not a process here.
var ErrNotLocal = errors.New("not an address of this host")

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, which
// Linux fixes at 100 for user space on every architecture Go supports.
const userHZ = 100

// SelfCPU is this process's user + system CPU time (all its threads).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// CPU is process pid's user + system CPU time from /proc/<pid>/stat, in
// ticks of 10 ms.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	d, err := parseStatCPU(string(b))
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	return d, nil
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so fields are counted from the
// last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat line without a command name: %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat line with %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat line: CPU time %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// ListenerPIDs are the processes of this host that hold the TCP socket
// listening on addr (host:port): the socket's inode from /proc/net/tcp and
// tcp6, then the processes whose /proc/<pid>/fd has socket:[inode]. An addr
// that is not this host's is ErrNotLocal.
func ListenerPIDs(addr string) ([]int, error) {
	host, portS, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portS, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port of %s: %w", addr, err)
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if !slices.ContainsFunc(ips, isLocalIP) {
		return nil, fmt.Errorf("%s: %w", addr, ErrNotLocal)
	}
	var inodes []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		in, err := listeningInodes(f, uint16(port), ips)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		inodes = append(inodes, in...)
	}
	if len(inodes) == 0 {
		return nil, fmt.Errorf("no socket of this host listens on %s", addr)
	}
	pids, err := socketOwners(inodes)
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("a socket listens on %s, but no process of this user holds it (/proc/*/fd)", addr)
	}
	return pids, nil
}

// isLocalIP: ip is a loopback address or one of this host's interfaces'.
func isLocalIP(ip net.IP) bool {
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// listeningInodes are the inodes of the sockets in a /proc/net/tcp-style
// file that listen on port, on one of ips or on every address.
func listeningInodes(file string, port uint16, ips []net.IP) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var inodes []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
			continue
		}
		ip, p, err := parseProcAddr(fs[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if p != port || !(ip.IsUnspecified() || slices.ContainsFunc(ips, ip.Equal)) {
			continue
		}
		inodes = append(inodes, fs[9])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return inodes, nil
}

// parseProcAddr reads an address of /proc/net/tcp or tcp6: the IP in hex,
// as 32-bit words in the host's byte order, a colon, the port in hex.
func parseProcAddr(s string) (net.IP, uint16, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("address %q without a port", s)
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, fmt.Errorf("address %q: not 4 or 16 bytes of hex", s)
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("address %q: port: %w", s, err)
	}
	return ip, uint16(port), nil
}

// socketOwners are the processes with a file descriptor on one of the
// socket inodes. Processes of other users cannot be read and are skipped.
func socketOwners(inodes []string) ([]int, error) {
	want := map[string]bool{}
	for _, in := range inodes {
		want["socket:["+in+"]"] = true
	}
	dirs, err := filepath.Glob("/proc/[0-9]*/fd")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		fds, err := os.ReadDir(d)
		if err != nil {
			continue // another user's, or gone
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(d, fd.Name())); err == nil && want[link] {
				pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
				if err == nil {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids, nil
}

// RSSMiB is process pid's resident set now (VmRSS) in MiB, 0 if unknown.
func RSSMiB(pid int) float64 { return statusMiB(pid, "VmRSS") }

// PeakRSSMiB is the peak of process pid's resident set (VmHWM) in MiB, 0 if
// unknown: since it started, or since ResetPeakRSS.
func PeakRSSMiB(pid int) float64 { return statusMiB(pid, "VmHWM") }

// ResetPeakRSS makes process pid's peak resident set its resident set now,
// so that PeakRSSMiB is the peak from here on (Linux 4.0 on).
func ResetPeakRSS(pid int) error {
	// Writing 5 to clear_refs resets VmHWM.
	if err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("reset the peak RSS of process %d: %w", pid, err)
	}
	return nil
}

// statusMiB is a size field (VmRSS, VmHWM) of /proc/<pid>/status in MiB, 0
// if unknown.
func statusMiB(pid int, field string) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return kib / 1024
		}
	}
	return 0
}
