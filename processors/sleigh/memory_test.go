package sleigh

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/comparer"
	"github.com/syndtr/goleveldb/leveldb/memdb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	ldbstorage "github.com/syndtr/goleveldb/leveldb/storage"

	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/record"
)

// memoryEnv runs TestMemoryPerPair, which measures what a pair costs in each
// storage the sleigh's view could have (docs/ARCHITECTURE.md, "The sleigh").
// It takes about a minute and 2 GiB, so the suite skips it.
const memoryEnv = "NORTHPOLE_SLEIGH_MEMORY"

// storesToMeasure put a pair (its packer's key, its ordered key, its value)
// into a store of their kind, in a process of its own.
var storesToMeasure = map[string]func() func(key string, ordered, value []byte){
	"gokastore.Memory": func() func(string, []byte, []byte) {
		st, _ := gokastore.Memory()("t", 0)
		return func(k string, _, v []byte) { _ = st.Set(k, v) }
	},
	"gokastore.Memory+memdb index": func() func(string, []byte, []byte) {
		st, _ := gokastore.Memory()("t", 0)
		idx := memdb.New(comparer.DefaultComparer, 0)
		return func(k string, o, v []byte) { _ = st.Set(k, v); _ = idx.Put(o, nil) }
	},
	"memdb": func() func(string, []byte, []byte) {
		db := memdb.New(comparer.DefaultComparer, 0)
		return func(_ string, o, v []byte) { _ = db.Put(o, v) }
	},
	"leveldb in memory, no compression": func() func(string, []byte, []byte) {
		db, _ := leveldb.Open(ldbstorage.NewMemStorage(), &opt.Options{Compression: opt.NoCompression})
		return func(_ string, o, v []byte) { _ = db.Put(o, v, nil) }
	},
	"leveldb in memory (the sleigh's)": func() func(string, []byte, []byte) {
		st, _ := memoryLevelDB()("t", 0)
		return func(_ string, o, v []byte) { _ = st.Set(string(o), v) }
	},
}

// TestMemoryPerPair fills each store with 1,000,000 pairs of the load
// test's shape, each in a process of its own, and logs the resident set it
// grew by, after a collection and at its peak, per pair.
func TestMemoryPerPair(t *testing.T) {
	if store := os.Getenv(memoryEnv + "_STORE"); store != "" {
		measureStore(store)
		return
	}
	if os.Getenv(memoryEnv) == "" {
		t.Skipf("measures memory for a minute; set %s=1 to run it", memoryEnv)
	}
	for name := range storesToMeasure {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryPerPair$", "-test.v")
		cmd.Env = append(os.Environ(), memoryEnv+"_STORE="+name)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.HasPrefix(line, "store ") {
				t.Log(line)
			}
		}
	}
}

func measureStore(name string) {
	const n = 1_000_000
	put := storesToMeasure[name]()
	debug.FreeOSMemory()
	before := statusKiB("VmRSS")
	first := int64(1798070400000000)
	for i := range n {
		p := testPair{size: record.Sizes[i%4], window: first + int64(i/1000)*10_000_000,
			toy: fmt.Sprintf("toy-5eed0001-%07d", i), box: fmt.Sprintf("box-5eed0002-%07d", i)}
		put(p.key(), orderedKey(p.key()), p.value())
	}
	peak := statusKiB("VmHWM")
	debug.FreeOSMemory()
	fmt.Printf("store %s: %d B/pair after a collection, %d B/pair at the peak\n", name,
		(statusKiB("VmRSS")-before)*1024/n, (peak-before)*1024/n)
	runtime.KeepAlive(put)
}

func statusKiB(field string) int {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
