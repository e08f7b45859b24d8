package kafkaconf_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

// TestKgoCompression: the batches a Kgo() client writes reach the broker in
// the codec the Config names, snappy when it names none, as every producer of
// the project (the elves, the packer's writes) builds its client from Kgo().
func TestKgoCompression(t *testing.T) {
	base := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// kgo numbers the codecs as the batch attributes do.
	for _, tc := range []struct {
		compression string
		want        uint8
	}{
		{"", 2}, // the default
		{"lz4", 3},
		{"snappy", 2},
		{"zstd", 4},
		{"none", 0},
	} {
		t.Run(fmt.Sprintf("%q", tc.compression), func(t *testing.T) {
			topic := testkafka.Unique("compression")
			if err := kafkaadmin.EnsureTopics(ctx, base, kafkaadmin.Topic{Name: topic, Partitions: 1}); err != nil {
				t.Fatal(err)
			}
			kc := base
			kc.Compression = tc.compression
			w, err := kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...))...)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// Records alike enough that every codec makes the batch smaller.
			const n = 200
			for i := range n {
				w.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"toy_id":"toy-%04d","size":"M","hall":"north"}`, i)}, nil)
			}
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}

			r, err := kc.NewReaderClient(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := 0
			err = topicread.Partition(ctx, r, topic, 0, func(rec *kgo.Record) error {
				got++
				if c := rec.Attrs.CompressionType(); c != tc.want {
					return fmt.Errorf("record at offset %d came in a batch of codec %d, want %d", rec.Offset, c, tc.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != n {
				t.Fatalf("read %d records, want %d", got, n)
			}
		})
	}
}
