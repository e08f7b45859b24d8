package packer

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/northpole-workshop/northpole/internal/record"
)

// TestLinePartition: observe expects the records of line s where the elves
// put them, with sarama's default hasher, FNV-1a of the whole key, and
// where goka's default hasher puts the line's loop and table records.
func TestLinePartition(t *testing.T) {
	lines := slices.Concat(record.Sizes, []string{"M/hall-7", "XL/" + strings.Repeat("z", record.MaxHallLen), "S/0"})
	for _, s := range lines {
		for n := int32(1); n <= 12; n++ {
			want, err := sarama.NewHashPartitioner("t").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s)}, n)
			if err != nil {
				t.Fatal(err)
			}
			if got := linePartition(s, n); got != want {
				t.Errorf("linePartition(%s, %d) = %d, sarama's partitioner says %d", s, n, got, want)
			}
		}
	}
}

func TestKeyShapes(t *testing.T) {
	long := strings.Repeat("x", keyIDMax+1)
	sum := sha256.Sum256([]byte(long))
	digest := hex.EncodeToString(sum[:])
	for _, c := range []struct{ got, want string }{
		// A carried id is keyed by the whole id's digest, like the whole id.
		{itemKey("M", 20, carryID(long, 40)), "M|20#" + digest},
		{itemKey("M", 1_798_070_400_000_000, "t1"), "M|1798070400000000|t1"},
		{itemKey("M", -10, long), "M|-10#" + digest},
		{lateKey("boxes", 2, 17), "boxes/2/17"},
		{deadKey("toys", 2, 17), "toys/2/17"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
}

// TestKeyWindowAndIDNeverCollide: ids are unique per (stream, line,
// window) only, so the output keys hold the window, and no two different
// (line, window, id) get one key, whatever separators an id holds, and
// whatever short id looks like another id's digest.
func TestKeyWindowAndIDNeverCollide(t *testing.T) {
	long := strings.Repeat("x", keyIDMax+1)
	sum := sha256.Sum256([]byte(long))
	ids := []string{"a", "1|i|a", "i|a", "0|i|a", "a#b", "#a", "1#a", "-1", "|", "", long, hex.EncodeToString(sum[:]), carryID(long+"y", 40)}
	windows := []int64{0, 1, 10, -1, -10, 101, 1_798_070_400_000_000}
	type item struct {
		line   string
		window int64
		id     string
	}
	out := map[string]item{}
	for _, line := range append(slices.Clone(record.Sizes), "M/1", "M/11") {
		for _, w := range windows {
			for _, id := range ids {
				it := item{line, w, id}
				k := itemKey(line, w, id)
				if prev, ok := out[k]; ok {
					t.Errorf("item key %q for %+v and %+v", k, prev, it)
				}
				out[k] = it
			}
		}
	}
}
