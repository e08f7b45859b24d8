package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/IBM/sarama"
)

// WorkerEnv names the environment variable through which a worker process
// gets its Worker whole, as JSON: the packer's configuration with every
// Kafka setting (TLS, SASL, the retry window, the protocol version), so that
// a worker talks to the broker exactly as the bench does. The environment,
// unlike a command line, is readable by the same user only: the SASL
// password travels in it.
const WorkerEnv = "NORTHPOLE_BENCH_WORKER"

// workerJSON is a Worker as WorkerEnv carries it. sarama.KafkaVersion has no
// exported field, so its text goes beside it.
type workerJSON struct {
	Worker
	KafkaVersion string `json:",omitempty"`
}

// Encode is w as WorkerEnv carries it.
func (w Worker) Encode() (string, error) {
	j := workerJSON{Worker: w}
	if v := w.Packer.Kafka.Version; v != (sarama.KafkaVersion{}) {
		j.KafkaVersion = v.String()
	}
	b, err := json.Marshal(j)
	if err != nil {
		return "", fmt.Errorf("bench: encode worker: %w", err)
	}
	return string(b), nil
}

// DecodeWorker reads what Encode wrote, and resolves the Kafka security
// settings again (the TLS configuration they build is not carried).
func DecodeWorker(s string) (Worker, error) {
	var j workerJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return Worker{}, fmt.Errorf("bench: decode $%s: %w", WorkerEnv, err)
	}
	w := j.Worker
	if j.KafkaVersion != "" {
		v, err := sarama.ParseKafkaVersion(j.KafkaVersion)
		if err != nil {
			return Worker{}, fmt.Errorf("bench: decode $%s: Kafka version: %w", WorkerEnv, err)
		}
		w.Packer.Kafka.Version = v
	}
	sec, err := w.Packer.Kafka.Security.Resolve()
	if err != nil {
		return Worker{}, fmt.Errorf("bench: decode $%s: %w", WorkerEnv, err)
	}
	w.Packer.Kafka.Security = sec
	return w, nil
}

// WorkerFromEnv is the Worker of this process when a bench started it (ok:
// WorkerEnv is set), read with DecodeWorker.
func WorkerFromEnv() (w Worker, ok bool, err error) {
	js, ok := os.LookupEnv(WorkerEnv)
	if !ok {
		return Worker{}, false, nil
	}
	w, err = DecodeWorker(js)
	return w, true, err
}

// Profile starts the CPU profile the worker's CPUProfile asks for, into
// that file until stop is called, which also writes the allocations made
// until then beside it (AllocsPath); without one, stop does nothing.
func (w Worker) Profile() (stop func() error, err error) {
	if w.CPUProfile == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(w.CPUProfile)
	if err != nil {
		return nil, fmt.Errorf("bench: CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("bench: CPU profile: %w", err)
		}
		a, err := os.Create(AllocsPath(w.CPUProfile))
		if err != nil {
			return fmt.Errorf("bench: allocations profile: %w", err)
		}
		err = pprof.Lookup("allocs").WriteTo(a, 0)
		if cerr := a.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("bench: allocations profile: %w", err)
		}
		return nil
	}, nil
}

// AllocsPath is where a worker whose CPU profile is at cpu writes its
// allocations profile: "allocs-" before the file's name.
func AllocsPath(cpu string) string {
	return filepath.Join(filepath.Dir(cpu), "allocs-"+filepath.Base(cpu))
}

// HopConfig is the hop worker's configuration: group HopGroup on the
// packer's Kafka and input topics.
func (w Worker) HopConfig() HopConfig {
	return HopConfig{Kafka: w.Packer.Kafka, Group: w.HopGroup, Toys: w.Packer.Topics.Toys, Boxes: w.Packer.Topics.Boxes}
}
