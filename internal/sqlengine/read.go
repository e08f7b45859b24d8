package sqlengine

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/northpole-workshop/northpole/internal/contractsql"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// ReadResults reads the five result relations (np_packed, np_unpacked,
// np_spare, np_late, np_dead) in schema, from any engine that has them:
// RisingWave's materialized views or a batch engine's tables. Times come out
// of SQL as integers (microseconds, plus nanoseconds for late rows) and are
// printed here exactly as the Go engines print them.
func ReadResults(ctx context.Context, db *sql.DB, schema string) (results.Set, error) {
	if err := ValidSchema(schema); err != nil {
		return results.Set{}, err
	}
	var s results.Set
	q := func(rel, cols string) string { return "SELECT " + cols + " FROM " + schema + "." + rel }

	err := scanAll(ctx, db, q(contractsql.Packed, "toy_id, box_id, line, size, window_start"), func(rs *sql.Rows) error {
		var toy, box []byte
		var line, size string
		var ws int64
		if err := rs.Scan(&toy, &box, &line, &size, &ws); err != nil {
			return err
		}
		s.Packed = append(s.Packed, results.Packed{ToyID: string(toy), BoxID: string(box), Line: line, Size: size, WindowStart: record.FormatMicros(ws)})
		return nil
	})
	if err != nil {
		return s, err
	}
	err = scanAll(ctx, db, q(contractsql.Unpacked, "toy_id, line, size, window_start"), func(rs *sql.Rows) error {
		var toy []byte
		var line, size string
		var ws int64
		if err := rs.Scan(&toy, &line, &size, &ws); err != nil {
			return err
		}
		s.Unpacked = append(s.Unpacked, results.Unpacked{ToyID: string(toy), Line: line, Size: size, WindowStart: record.FormatMicros(ws)})
		return nil
	})
	if err != nil {
		return s, err
	}
	err = scanAll(ctx, db, q(contractsql.Spare, "box_id, line, size, window_start"), func(rs *sql.Rows) error {
		var box []byte
		var line, size string
		var ws int64
		if err := rs.Scan(&box, &line, &size, &ws); err != nil {
			return err
		}
		s.Spare = append(s.Spare, results.Spare{BoxID: string(box), Line: line, Size: size, WindowStart: record.FormatMicros(ws)})
		return nil
	})
	if err != nil {
		return s, err
	}
	err = scanAll(ctx, db, q(contractsql.Late, "stream, kpartition, koffset, id, line, size, made_us, made_ns"), func(rs *sql.Rows) error {
		var stream, line, size string
		var id []byte
		var part, off, us, ns int64
		if err := rs.Scan(&stream, &part, &off, &id, &line, &size, &us, &ns); err != nil {
			return err
		}
		at := time.UnixMicro(us).Add(time.Duration(ns))
		s.Late = append(s.Late, results.Late{
			Stream: stream, Partition: int32(part), Offset: off,
			ID: string(id), Line: line, Size: size, MadeAt: record.FormatTime(at),
		})
		return nil
	})
	if err != nil {
		return s, err
	}
	err = scanAll(ctx, db, q(contractsql.Dead, "stream, kpartition, koffset, reason"), func(rs *sql.Rows) error {
		var stream, reason string
		var part, off int64
		if err := rs.Scan(&stream, &part, &off, &reason); err != nil {
			return err
		}
		s.Dead = append(s.Dead, results.Dead{Stream: stream, Partition: int32(part), Offset: off, Reason: reason})
		return nil
	})
	if err != nil {
		return s, err
	}
	s.Sort()
	return s, nil
}

func scanAll(ctx context.Context, db *sql.DB, query string, row func(*sql.Rows) error) error {
	rs, err := db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("read results: %s: %w", query, err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := row(rs); err != nil {
			return fmt.Errorf("read results: %s: %w", query, err)
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("read results: %s: %w", query, err)
	}
	return nil
}
