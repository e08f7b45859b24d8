package record

// Input is one record as read back from Kafka: where it is and its raw bytes.
// It is the unit every engine starts from (the reference, the SQL loaders) and
// the line format of DIR/input/*.jsonl in the demo.
type Input struct {
	Stream    Stream
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
}

// ClaimedSize is the size class a record claims, whether or not it is valid:
// its JSON's "size" when that is a size class and also the size part of the
// record's key (see SplitLine). Reports count a dead letter under it (a
// duplicate, a record without an id, with a bad made_at or a bad line); a
// record that is not JSON, has no size class, or is keyed by another size
// claims none.
func ClaimedSize(in Input) (string, bool) {
	fields, _ := Object(in.Value)
	s, ok := JSONString(fields["size"])
	keySize, _, _ := SplitLine(string(in.Key))
	if !ok || !ValidSize(s) || s != keySize {
		return "", false
	}
	return s, true
}
