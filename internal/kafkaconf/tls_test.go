package kafkaconf_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// pki is a throwaway CA with one server and one client certificate, written as
// PEM files the way a user would hand them to --tls-ca, --tls-cert, --tls-key.
type pki struct {
	caFile, clientCert, clientKey string
	caPool                        *x509.CertPool
	server                        tls.Certificate
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "northpole test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "localhost"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	var p pki
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(ca)
	srvDER, srvKey := issue(2, x509.ExtKeyUsageServerAuth)
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	cliDER, cliKey := issue(3, x509.ExtKeyUsageClientAuth)
	p.clientCert = write("client.pem", "CERTIFICATE", cliDER)
	kb, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKey = write("client-key.pem", "EC PRIVATE KEY", kb)
	return p
}

// TestTLSAgainstBroker runs the TLS settings every command takes against a
// broker with a TLS listener (kfake on loopback): a client that trusts the CA
// (from --tls-ca) gets through, with and without a client certificate when
// the broker requires one; a client that does not trust it, or speaks
// plaintext, is refused with an error, not a hang.
func TestTLSAgainstBroker(t *testing.T) {
	p := newPKI(t)
	start := func(t *testing.T, mutual bool) []string {
		tc := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
		if mutual {
			tc.ClientAuth, tc.ClientCAs = tls.RequireAndVerifyClientCert, p.caPool
		}
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(tc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()
	}
	cases := []struct {
		name    string
		mutual  bool
		sec     kafkaconf.Security
		wantErr string // "" = must work
	}{
		{name: "CA file", sec: kafkaconf.Security{TLS: true, TLSCAFile: p.caFile}},
		{name: "mutual TLS", mutual: true, sec: kafkaconf.Security{TLS: true, TLSCAFile: p.caFile, TLSCertFile: p.clientCert, TLSKeyFile: p.clientKey}},
		{name: "skip verify (test brokers)", sec: kafkaconf.Security{TLS: true, InsecureSkipVerify: true}},
		{name: "untrusted CA", sec: kafkaconf.Security{TLS: true}, wantErr: "cannot reach kafka"},
		{name: "no client certificate", mutual: true, sec: kafkaconf.Security{TLS: true, TLSCAFile: p.caFile}, wantErr: "cannot reach kafka"},
		{name: "plaintext to a TLS listener", sec: kafkaconf.Security{}, wantErr: "cannot reach kafka"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			brokers := start(t, tc.mutual)
			sec, err := tc.sec.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			kc := kafkaconf.Config{Brokers: brokers, Security: sec}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			topic := kafkaadmin.Topic{Name: "tls-test", Partitions: 1}
			err = kafkaadmin.EnsureTopics(ctx, kc, topic)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("EnsureTopics = %v, want an error containing %q", err, tc.wantErr)
				}
				t.Logf("refused as expected: %v", err)
				// The goka processors' franz-go producer is refused too.
				kc.RetryFor = 3 * time.Second
				if err := kafkaconf.KgoProduceForTest(ctx, kc, topic.Name); err == nil {
					t.Fatal("the franz-go producer got through")
				} else {
					t.Logf("franz-go producer refused as expected: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureTopics over TLS: %v", err)
			}
			// goka's consumers connect with the sarama config.
			prod, err := sarama.NewSyncProducer(kc.Brokers, kc.Sarama())
			if err != nil {
				t.Fatalf("producer over TLS: %v", err)
			}
			defer prod.Close()
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic.Name, Key: sarama.StringEncoder("M"), Value: sarama.StringEncoder("{}")}); err != nil {
				t.Fatalf("produce over TLS: %v", err)
			}
			if err := kafkaconf.KgoProduceForTest(ctx, kc, topic.Name); err != nil {
				t.Fatalf("franz-go produce over TLS: %v", err)
			}
		})
	}
}
