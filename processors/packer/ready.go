package packer

import (
	"fmt"
	"strings"
)

// ReadyPrefix starts ReadyLine: what a process that runs the packer and
// whoever watches it (the bench, which times a restart to it; the tests that
// count restarts) agree on.
const ReadyPrefix = "packer ready"

// ReadyLine is the line a process running the packer of c prints once it is
// ready (Config.Ready), for people and for the bench: ReadyPrefix, then what
// it consumes, where, and its group.
func ReadyLine(c Config) string {
	return fmt.Sprintf("%s: consuming %s, %s on %s (group %s)", ReadyPrefix, c.Topics.Toys, c.Topics.Boxes,
		strings.Join(c.Kafka.Brokers, ","), c.clockGroup())
}
