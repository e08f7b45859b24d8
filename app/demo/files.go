package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/app/report"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
)

// inputLine is one line of DIR/input/*.jsonl. A value that is not UTF-8 cannot
// be a JSON string without loss, so it is also given in base64.
type inputLine struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	Key         string `json:"key"`
	Value       string `json:"value"`
	ValueBase64 []byte `json:"value_base64,omitempty"`
}

// WriteFiles writes, under dir, every input record as read back
// (input/toys.jsonl, input/boxes.jsonl), Goka's five result sets
// (goka/{packed,unpacked,spare,late,dead}.jsonl; dead.jsonl holds the
// dead-letters topic's records, with the reason's detail and the raw record),
// the embedded SQLite's (sql/, the same five files) and summary.json.
func WriteFiles(dir string, r Result) error {
	for _, sub := range []string{"input", "goka", "sql"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
	}
	toLines := func(in []record.Input) []inputLine {
		out := make([]inputLine, len(in))
		for i, r := range in {
			out[i] = inputLine{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)}
			if !utf8.Valid(r.Value) {
				out[i].ValueBase64 = r.Value
			}
		}
		return out
	}
	type file struct {
		name string
		rows any
	}
	files := []file{{"input/toys.jsonl", toLines(r.Run.Toys)}, {"input/boxes.jsonl", toLines(r.Run.Boxes)}}
	for side, s := range map[string]results.Set{"goka": r.Run.Goka, "sql": r.SQL} {
		files = append(files, file{side + "/packed.jsonl", s.Packed}, file{side + "/unpacked.jsonl", s.Unpacked},
			file{side + "/spare.jsonl", s.Spare}, file{side + "/late.jsonl", s.Late})
	}
	files = append(files, file{"goka/dead.jsonl", r.Run.DeadLetters}, file{"sql/dead.jsonl", r.SQL.Dead})
	for _, f := range files {
		if err := writeJSONL(filepath.Join(dir, f.name), f.rows); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(r.Summary, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644)
}

// writeJSONL writes the elements of the slice rows, one JSON document a line.
func writeJSONL(path string, rows any) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	enc := json.NewEncoder(f)
	var list []any
	b, _ := json.Marshal(rows)
	_ = json.Unmarshal(b, &list)
	for _, r := range list {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteReport writes dir/report.html (app/report) for the run, with
// the service map g when there is one and its check (Result.CheckMap) when
// that was made, and the metrics' check (Result.CheckMetrics) when that
// was; where says which Kafka it ran on.
func WriteReport(dir string, r Result, where string, g *servicemap.Graph) error {
	sql := r.SQLComparison
	sql.SQL = "the embedded SQLite (the shared contract SQL on the input records)"
	in := report.Input{
		Title: "northpole demo", Goka: "Goka's results on " + where, Params: r.Params,
		Set: r.Run.Goka, Inputs: r.Run.Inputs(), Reference: r.Reference, SQL: sql, ServiceMap: g,
	}
	if edges := r.Summary.MapEdges; r.Summary.MapCheck != "" {
		v := report.Verdict{Check: "the service map vs the records read back", Equal: edges.Equal(), Detail: edges.String()}
		if !v.Equal {
			v.Detail += " (" + MapDiffers + ")"
		}
		in.MapCheck = &v
	}
	if m := r.Summary.Metrics; m != nil {
		in.MetricsCheck = &report.Verdict{Check: "the OpenTelemetry metrics vs the records read back", Equal: m.Equal(),
			Detail: m.String() + ": " + m.Verdict()}
	}
	return report.WriteFile(dir, in)
}

// OutFiles lists the files WriteOut writes, for the demo command's help,
// which includes it so that the two cannot drift apart.
const OutFiles = `  DIR/input/toys.jsonl, DIR/input/boxes.jsonl   every input record as read back
  DIR/goka/{packed,unpacked,spare,late,dead}.jsonl  Goka's five result sets
                                                (dead.jsonl: the dead-letters
                                                topic's records, with the
                                                reason's detail and raw record)
  DIR/sql/{packed,unpacked,spare,late,dead}.jsonl   the embedded SQLite's
  DIR/summary.json                              the counts (toys and boxes
                                                apart from heartbeats; a dead
                                                letter counts under by_size
                                                when its record has a valid
                                                size that is its key, else
                                                under dead_without_size) and
                                                the verdicts: reference_check,
                                                sql_check, map_check (with
                                                map_edges), metrics (the
                                                components' OpenTelemetry
                                                counts against them)
  DIR/servicemap.{mmd,svg}                      the service map (Mermaid, SVG)
  DIR/servicemap-topics.{mmd,svg}               the map with a node per topic
  DIR/report.html                               one page to open in a browser: the
                                                counts per size, the windows, the
                                                service map, the verdict and any
                                                differing rows`

// WriteOut writes what `demo --out dir` asks for, saying on w what it
// wrote: the records and results and summary.json (WriteFiles), the
// service maps of tr (servicemap.{mmd,svg}, SigNoz's, and
// servicemap-topics.{mmd,svg}, a node per topic) when the demo drew them,
// and report.html (WriteReport), which draws the map with topics. where
// says which Kafka the demo ran on.
func WriteOut(w io.Writer, dir string, r Result, where string, tr Traces) error {
	if err := WriteFiles(dir, r); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwrote %s/{input,goka,sql}/*.jsonl and %s/summary.json\n", dir, dir)
	if tr.Map != nil && tr.TopicMap != nil {
		for _, m := range []struct {
			name string
			g    *servicemap.Graph
		}{{"servicemap", tr.Map}, {"servicemap-topics", tr.TopicMap}} {
			if err := m.g.WriteFiles(filepath.Join(dir, m.name+".mmd"), filepath.Join(dir, m.name+".svg")); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "wrote %s/servicemap{,-topics}.{mmd,svg}\n", dir)
	}
	if err := WriteReport(dir, r, where, tr.TopicMap); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s/%s: open it in a browser\n", dir, report.FileName)
	return nil
}
