package kafkaconf

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// The environment variables that stand in for the settings a command leaves
// unset (FromEnv), and the one that holds the SASL password
// (Security.Resolve), which has no other source than a file: a password on
// a command line shows in ps and in the shell's history.
const (
	EnvBrokers       = "NORTHPOLE_BROKERS"
	EnvRetryFor      = "NORTHPOLE_KAFKA_RETRY_FOR"
	EnvTLS           = "NORTHPOLE_KAFKA_TLS"
	EnvTLSCA         = "NORTHPOLE_KAFKA_TLS_CA"
	EnvTLSCert       = "NORTHPOLE_KAFKA_TLS_CERT"
	EnvTLSKey        = "NORTHPOLE_KAFKA_TLS_KEY"
	EnvSASLMechanism = "NORTHPOLE_KAFKA_SASL_MECHANISM"
	EnvSASLUser      = "NORTHPOLE_KAFKA_SASL_USER"
	EnvSASLPassFile  = "NORTHPOLE_KAFKA_SASL_PASSWORD_FILE"
	EnvSASLPassword  = "NORTHPOLE_KAFKA_SASL_PASSWORD"
)

// FromEnv is c with each setting it leaves unset (empty, zero, false) taken
// from its variable above, then resolved (Security.Resolve: the password
// and the TLS files read): what c sets wins. Brokers come from
// $NORTHPOLE_BROKERS only with brokersFromEnv; a command whose default is a
// Kafka of its own (the demo's and the bench's in-process one) passes false.
// A variable that does not parse, and a negative duration, is a
// *SettingsError; FlushFrequency has no variable. Call it once per process.
func (c Config) FromEnv(brokersFromEnv bool) (Config, error) {
	if len(c.Brokers) == 0 && brokersFromEnv {
		c.Brokers = SplitBrokers(os.Getenv(EnvBrokers))
	}
	s := &c.Security
	for _, f := range []struct {
		setting *string
		env     string
	}{
		{&s.TLSCAFile, EnvTLSCA}, {&s.TLSCertFile, EnvTLSCert}, {&s.TLSKeyFile, EnvTLSKey},
		{&s.SASLMechanism, EnvSASLMechanism}, {&s.SASLUser, EnvSASLUser}, {&s.SASLPasswordFile, EnvSASLPassFile},
	} {
		if *f.setting == "" {
			*f.setting = os.Getenv(f.env)
		}
	}
	if v := os.Getenv(EnvTLS); !s.TLS && v != "" {
		tls, err := strconv.ParseBool(v)
		if err != nil {
			// Ignoring it would connect in plaintext to a TLS listener.
			return c, settingsErr(fmt.Sprintf("$%s=%q is not a boolean: use true or false (also 1/0, t/f)", EnvTLS, v), "Security.TLS")
		}
		s.TLS = tls
	}
	if v := os.Getenv(EnvRetryFor); c.RetryFor == 0 && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, settingsErr(fmt.Sprintf("$%s=%q is not a duration (e.g. 2m)", EnvRetryFor, v), "RetryFor")
		}
		c.RetryFor = d
	}
	if err := c.validDurations(); err != nil {
		return c, err
	}
	resolved, err := c.Security.Resolve()
	if err != nil {
		return c, err
	}
	c.Security = resolved
	return c, nil
}
