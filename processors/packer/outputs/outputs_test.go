package outputs_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
)

// TestRead: the result topics read as a consumer reads them: the first
// record of each key, re-sent records counted (and those re-sent with
// another value as conflicts), and the dead letters whole, in the order of
// the set's dead rows, read from their topic once.
func TestRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc := testkafka.Config(t)
	name := testkafka.Unique("outputs")
	topics := packer.Topics{Toys: name + "-toys", Boxes: name + "-boxes", Packed: name + "-packed", Unpacked: name + "-unpacked",
		Spare: name + "-spare", Late: name + "-late", Dead: name + "-dead"}
	var ts []kafkaadmin.Topic
	for _, n := range []string{topics.Packed, topics.Unpacked, topics.Spare, topics.Late, topics.Dead} {
		ts = append(ts, kafkaadmin.Topic{Name: n, Partitions: 2})
	}
	if err := kafkaadmin.EnsureTopics(ctx, kc, ts...); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec := func(topic string, partition int32, key, value string) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: partition, Key: []byte(key), Value: []byte(value)}
	}
	packed := `{"toy_id":"t1","box_id":"b1","size":"M","window_start":"2026-12-24T00:00:00Z"}`
	// Dead letters written out of their (stream, partition, offset) order,
	// on two partitions, one of them again (a redelivery).
	dead2 := `{"stream":"toys","topic":"toys","partition":2,"offset":7,"reason":"malformed json","detail":"unexpected end","key":"M","value":"{"}`
	dead1 := `{"stream":"toys","topic":"toys","partition":0,"offset":3,"reason":"invalid size","detail":"size \"Q\"","key":"Q","value":"{}"}`
	deadBox := `{"stream":"boxes","topic":"boxes","partition":1,"offset":0,"reason":"missing id","key":"S","value":"{\"size\":\"S\"}"}`
	if err := cl.ProduceSync(ctx,
		rec(topics.Packed, 0, "M|1|t1", packed),
		rec(topics.Packed, 0, "M|1|t1", packed),
		rec(topics.Packed, 1, "M|1|t1", `{"toy_id":"t1","box_id":"b2","size":"M","window_start":"2026-12-24T00:00:00Z"}`),
		rec(topics.Dead, 0, "toys/2/7", dead2),
		rec(topics.Dead, 1, "toys/0/3", dead1),
		rec(topics.Dead, 0, "boxes/1/0", deadBox),
		rec(topics.Dead, 1, "toys/2/7", dead2),
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got, err := outputs.Read(ctx, kc, topics)
	if err != nil {
		t.Fatal(err)
	}
	if want := (outputs.Counts{Records: 7, Duplicates: 3, Conflicts: 1}); got.Raw != want {
		t.Errorf("raw counts %+v, want %+v", got.Raw, want)
	}
	if len(got.Set.Packed) != 1 || got.Set.Packed[0].ToyID != "t1" {
		t.Errorf("packed %+v, want the one pair t1", got.Set.Packed)
	}
	if len(got.DeadLetters) != 3 || len(got.Set.Dead) != 3 {
		t.Fatalf("%d dead letters and %d dead rows, want 3 of each", len(got.DeadLetters), len(got.Set.Dead))
	}
	for i, d := range got.Set.Dead {
		dl := got.DeadLetters[i]
		if string(dl.Stream) != d.Stream || dl.Partition != d.Partition || dl.Offset != d.Offset || string(dl.Reason) != d.Reason {
			t.Errorf("dead row %d is %+v, its dead letter %+v", i, d, dl)
		}
	}
	if d := got.Set.Dead; d[0].Stream != "boxes" || d[1].Partition != 0 || d[2].Partition != 2 {
		t.Errorf("dead rows %+v, want boxes first, then toys by partition", d)
	}
	if got.DeadLetters[1].Detail != `size "Q"` || got.DeadLetters[1].Value == nil || *got.DeadLetters[1].Value != "{}" {
		t.Errorf("dead letter %+v lost its detail or its raw record", got.DeadLetters[1])
	}
}
