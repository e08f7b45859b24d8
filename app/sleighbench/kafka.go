package sleighbench

import (
	"strconv"
	"strings"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// sleighKafka is how the sleigh process is told kc: each setting that has a
// flag of northpole process sleigh as that flag, and the SASL password,
// which has none (kafkaconf.Security), in $NORTHPOLE_KAFKA_SASL_PASSWORD.
// Its environment is environ without this process's Kafka variables
// ($NORTHPOLE_BROKERS, $NORTHPOLE_KAFKA_*): what this process took from
// them is in kc already, and what it left out for the in-process Kafka (TLS,
// SASL) must not reach the sleigh either.
func sleighKafka(kc kafkaconf.Config, environ []string) (args, env []string) {
	args = []string{"--brokers", strings.Join(kc.Brokers, ",")}
	add := func(flag, value string) {
		if value != "" {
			args = append(args, flag, value)
		}
	}
	if kc.RetryFor > 0 {
		add("--kafka-retry-for", kc.RetryFor.String())
	}
	if kc.FlushFrequency > 0 {
		add("--kafka-flush", kc.FlushFrequency.String())
	}
	add("--kafka-compression", kc.Compression)
	if kc.CommitEvery > 0 {
		add("--kafka-commit-every", kc.CommitEvery.String())
	}
	if kc.FetchMin > 0 {
		add("--kafka-fetch-min-bytes", strconv.Itoa(int(kc.FetchMin)))
	}
	if kc.FetchWait > 0 {
		add("--kafka-fetch-wait", kc.FetchWait.String())
	}
	s := kc.Security
	if s.TLS {
		args = append(args, "--tls")
	}
	if s.InsecureSkipVerify {
		args = append(args, "--tls-insecure-skip-verify")
	}
	add("--tls-ca", s.TLSCAFile)
	add("--tls-cert", s.TLSCertFile)
	add("--tls-key", s.TLSKeyFile)
	add("--sasl-mechanism", s.SASLMechanism)
	add("--sasl-user", s.SASLUser)
	for _, e := range environ {
		// Every Kafka variable of kafkaconf but the brokers' starts so.
		if !strings.HasPrefix(e, "NORTHPOLE_KAFKA_") && !strings.HasPrefix(e, kafkaconf.EnvBrokers+"=") {
			env = append(env, e)
		}
	}
	if s.SASLPassword != "" {
		env = append(env, kafkaconf.EnvSASLPassword+"="+s.SASLPassword)
	}
	return args, env
}
