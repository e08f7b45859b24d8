package main

import (
	"net"
	"strconv"
)

// validListen refuses an address a server cannot listen on for its form
// alone (host:port, the port a number up to 65535; the host may be empty for
// every interface, the port 0 for any free one), so that a typo is a usage error before anything starts;
// whether the port is free is only known when listening.
func validListen(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("%s %q: want host:port, e.g. 127.0.0.1:PORT, or :PORT for every interface (%w)", flag, addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return usageErr("%s %q: the port must be a number from 0 to 65535", flag, addr)
	}
	return nil
}
