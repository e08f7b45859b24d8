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
