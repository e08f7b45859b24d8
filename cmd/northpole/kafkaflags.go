package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// kafkaOptions are the flags every command that talks to Kafka shares. Most
// have an environment variable as fallback (kafkaconf.Config.FromEnv). The
// SASL password has no flag on purpose: argv is visible to every user of
// the machine.
type kafkaOptions struct {
	brokers   string
	retryFor  time.Duration
	flush     time.Duration
	compress  string
	commit    time.Duration
	fetchMin  int32
	fetchWait time.Duration
	sec       kafkaconf.Security
	// inProcessDefault: no --brokers means the in-process Kafka, not
	// $NORTHPOLE_BROKERS (the demo, the bench).
	inProcessDefault bool
}

// bind binds the flags of a command that writes to Kafka or runs goka
// processors: bindReader's, and how writes are batched and retried.
func (o *kafkaOptions) bind(fs *pflag.FlagSet, brokersHelp string) {
	o.bindReader(fs, brokersHelp)
	fs.DurationVar(&o.retryFor, "kafka-retry-for", 0, "how long to keep retrying writes, and starting goka processors a broker error stopped again, while a broker is unreachable before giving up (default "+
		kafkaconf.DefaultRetryFor.String()+"; $"+kafkaconf.EnvRetryFor+")")
	fs.DurationVar(&o.flush, "kafka-flush", 0, "how long a written record may wait in the client's buffer to be batched with others: lower is less latency per hop, higher is less CPU at low rates (default "+
		kafkaconf.DefaultFlushFrequency.String()+")")
	fs.StringVar(&o.compress, "kafka-compression", "", "compression of written batches: "+strings.Join(kafkaconf.Compressions, ", ")+" (default "+kafkaconf.DefaultCompression+"; a batch it does not make smaller is sent uncompressed)")
	fs.DurationVar(&o.commit, "kafka-commit-every", 0, "how often goka processors commit their consumed offsets: after a crash, what came after the last commit is processed again (default "+
		kafkaconf.DefaultCommitEvery.String()+")")
	fs.Int32Var(&o.fetchMin, "kafka-fetch-min-bytes", 0, fmt.Sprintf("bytes a goka processor's fetch waits for before the broker answers, at most --kafka-fetch-wait: fewer fetches for the broker, every record later by up to that wait (default %d)", kafkaconf.DefaultFetchMin))
	fs.DurationVar(&o.fetchWait, "kafka-fetch-wait", 0, "how long the broker may hold a goka processor's fetch for --kafka-fetch-min-bytes, whole milliseconds (default "+
		kafkaconf.DefaultFetchWait.String()+")")
}

// bindReader binds the flags of a command that only reads Kafka: the
// brokers and the connection's security, none of the writers' settings.
func (o *kafkaOptions) bindReader(fs *pflag.FlagSet, brokersHelp string) {
	fs.StringVar(&o.brokers, "brokers", "", brokersHelp)
	fs.BoolVar(&o.sec.TLS, "tls", false, "connect to Kafka with TLS ($"+kafkaconf.EnvTLS+"=true)")
	fs.StringVar(&o.sec.TLSCAFile, "tls-ca", "", "PEM file of the CAs to trust (default: the system's; $"+kafkaconf.EnvTLSCA+")")
	fs.StringVar(&o.sec.TLSCertFile, "tls-cert", "", "PEM client certificate for mutual TLS ($"+kafkaconf.EnvTLSCert+")")
	fs.StringVar(&o.sec.TLSKeyFile, "tls-key", "", "PEM key of --tls-cert ($"+kafkaconf.EnvTLSKey+")")
	fs.BoolVar(&o.sec.InsecureSkipVerify, "tls-insecure-skip-verify", false, "do not verify the broker's certificate (test brokers only)")
	fs.StringVar(&o.sec.SASLMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 ($"+kafkaconf.EnvSASLMechanism+")")
	fs.StringVar(&o.sec.SASLUser, "sasl-user", "", "SASL user ($"+kafkaconf.EnvSASLUser+"); the password comes from $"+kafkaconf.EnvSASLPassword+" or --sasl-password-file")
	fs.StringVar(&o.sec.SASLPasswordFile, "sasl-password-file", "", "file holding the SASL password ($"+kafkaconf.EnvSASLPassFile+")")
}

// config is the Kafka config of the flags, with what they leave unset taken
// from the environment and resolved (kafkaconf.Config.FromEnv; brokers too,
// unless inProcessDefault). Brokers may be empty when the caller has its
// own default (the demo's in-process Kafka).
func (o *kafkaOptions) config(clientID string) (kafkaconf.Config, error) {
	kc := kafkaconf.Config{Brokers: kafkaconf.SplitBrokers(o.brokers), ClientID: clientID, Security: o.sec, RetryFor: o.retryFor, FlushFrequency: o.flush,
		Compression: o.compress, CommitEvery: o.commit, FetchMin: o.fetchMin, FetchWait: o.fetchWait}
	kc, err := kc.FromEnv(!o.inProcessDefault)
	if err != nil {
		return kafkaconf.Config{}, usageErr("%w", err)
	}
	return kc, nil
}

// kafkaSettingFlags are the flags (and variables) that set each
// kafkaconf.Config field, as kafkaconf.SettingsError names them.
var kafkaSettingFlags = map[string]string{
	"Brokers":                     "--brokers",
	"RetryFor":                    "--kafka-retry-for or $" + kafkaconf.EnvRetryFor,
	"FlushFrequency":              "--kafka-flush",
	"Compression":                 "--kafka-compression",
	"CommitEvery":                 "--kafka-commit-every",
	"FetchMin":                    "--kafka-fetch-min-bytes",
	"FetchWait":                   "--kafka-fetch-wait",
	"Security.TLS":                "--tls or $" + kafkaconf.EnvTLS,
	"Security.TLSCAFile":          "--tls-ca or $" + kafkaconf.EnvTLSCA,
	"Security.TLSCertFile":        "--tls-cert or $" + kafkaconf.EnvTLSCert,
	"Security.TLSKeyFile":         "--tls-key or $" + kafkaconf.EnvTLSKey,
	"Security.InsecureSkipVerify": "--tls-insecure-skip-verify",
	"Security.SASLMechanism":      "--sasl-mechanism or $" + kafkaconf.EnvSASLMechanism,
	"Security.SASLUser":           "--sasl-user or $" + kafkaconf.EnvSASLUser,
	"Security.SASLPasswordFile":   "--sasl-password-file or $" + kafkaconf.EnvSASLPassFile,
}

// withKafkaFlags adds to an error about Kafka settings the flags that set
// them: kafkaconf names the settings, only the command line knows its flags.
func withKafkaFlags(err error) error {
	var flags []string
	for _, s := range kafkaconf.Settings(err) {
		if f, ok := kafkaSettingFlags[s]; ok {
			flags = append(flags, f)
		}
	}
	if len(flags) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(flags, "; "))
}
