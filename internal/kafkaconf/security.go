package kafkaconf

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/xdg-go/scram"
)

// SASL mechanisms northpole supports.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Security is how clients authenticate and encrypt. Secrets never come from
// flags (they would show in ps and shell history): the password is read from
// $NORTHPOLE_KAFKA_SASL_PASSWORD or from a file, by Resolve.
type Security struct {
	TLS                bool
	TLSCAFile          string // PEM roots; empty = the system's
	TLSCertFile        string // client certificate (mutual TLS), PEM
	TLSKeyFile         string
	TLSServerName      string
	InsecureSkipVerify bool

	SASLMechanism    string // "", PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
	SASLUser         string
	SASLPasswordFile string
	// SASLPassword is filled by Resolve; never logged (see LogValue).
	SASLPassword string

	tlsConfig *tls.Config
}

// LogValue keeps the password out of logs.
func (s Security) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("tls", s.TLS),
		slog.String("sasl_mechanism", s.SASLMechanism),
		slog.String("sasl_user", s.SASLUser),
		slog.Bool("sasl_password_set", s.SASLPassword != ""),
	)
}

// String keeps the password out of %v formatting.
func (s Security) String() string { return s.LogValue().String() }

// Validate checks the settings without touching files, and reports every
// one that cannot work; its errors are *SettingsError.
func (s Security) Validate() error {
	var errs []error
	switch strings.ToUpper(s.SASLMechanism) {
	case "":
		if s.SASLUser != "" {
			errs = append(errs, settingsErr("a SASL user is given without a SASL mechanism", "Security.SASLUser", "Security.SASLMechanism"))
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if s.SASLUser == "" {
			errs = append(errs, settingsErr(fmt.Sprintf("SASL %s needs a user", s.SASLMechanism), "Security.SASLUser"))
		}
	default:
		errs = append(errs, settingsErr(fmt.Sprintf("SASL mechanism %q is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", s.SASLMechanism), "Security.SASLMechanism"))
	}
	if (s.TLSCertFile == "") != (s.TLSKeyFile == "") {
		errs = append(errs, settingsErr("a TLS client certificate and its key go together", "Security.TLSCertFile", "Security.TLSKeyFile"))
	}
	if !s.TLS && (s.TLSCAFile != "" || s.TLSCertFile != "" || s.InsecureSkipVerify) {
		errs = append(errs, settingsErr("TLS options (CA, client certificate, skipping verification) given with TLS off", "Security.TLS"))
	}
	return errors.Join(errs...)
}

// Resolve reads what the settings point to: the password (from the file, or
// else the environment) and the TLS files. Call it once per process.
func (s Security) Resolve() (Security, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	s.SASLMechanism = strings.ToUpper(s.SASLMechanism)
	if s.SASLMechanism != "" && s.SASLPassword == "" {
		switch {
		case s.SASLPasswordFile != "":
			b, err := os.ReadFile(s.SASLPasswordFile)
			if err != nil {
				return s, fmt.Errorf("kafka: read SASL password file: %w", err)
			}
			s.SASLPassword = strings.TrimRight(string(b), "\r\n")
		default:
			s.SASLPassword = os.Getenv(EnvSASLPassword)
		}
		if s.SASLPassword == "" {
			return s, settingsErr(fmt.Sprintf("SASL %s for user %q needs a password: set $%s or a password file", s.SASLMechanism, s.SASLUser, EnvSASLPassword),
				"Security.SASLPasswordFile")
		}
	}
	if s.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.TLSServerName, InsecureSkipVerify: s.InsecureSkipVerify} //nolint:gosec // opt-in, for test brokers
		if s.TLSCAFile != "" {
			pem, err := os.ReadFile(s.TLSCAFile)
			if err != nil {
				return s, fmt.Errorf("kafka: read TLS CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return s, fmt.Errorf("kafka: no PEM certificate in %s", s.TLSCAFile)
			}
			tc.RootCAs = pool
		}
		if s.TLSCertFile != "" {
			cert, err := tls.LoadX509KeyPair(s.TLSCertFile, s.TLSKeyFile)
			if err != nil {
				return s, fmt.Errorf("kafka: load TLS client certificate: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		s.tlsConfig = tc
	}
	return s, nil
}

// apply sets the security part of a sarama config (goka's consumers).
func (s Security) apply(cfg *sarama.Config) {
	if s.TLS {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = s.tlsConfig
		if cfg.Net.TLS.Config == nil {
			cfg.Net.TLS.Config = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	if s.SASLMechanism == "" {
		return
	}
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.User = s.SASLUser
	cfg.Net.SASL.Password = s.SASLPassword
	switch strings.ToUpper(s.SASLMechanism) {
	case SASLPlain:
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case SASLScramSHA256:
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha256.New)} }
	case SASLScramSHA512:
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha512.New)} }
	}
}

// scramClient adapts xdg-go/scram to sarama's SCRAMClient.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = client.NewConversation()
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) { return c.conv.Step(challenge) }
func (c *scramClient) Done() bool                            { return c.conv.Done() }

// explain turns the error of a first connection into what a user should
// check. kgo reports a refused password as Kafka's error code, and anything
// that kept it from talking to a broker at all (nothing listening, TLS on one
// side only, an untrusted certificate) as the network's or TLS's error.
func (c Config) explain(err error) error {
	var kafkaErr *kerr.Error
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("kafka %v refused SASL %s authentication for user %q (wrong user or password?): %w", c.Brokers, c.Security.SASLMechanism, c.Security.SASLUser, err)
	case errors.As(err, &kafkaErr), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("cannot reach kafka at %v (is it running? right port? TLS/SASL settings match the listener?): %w", c.Brokers, err)
}
