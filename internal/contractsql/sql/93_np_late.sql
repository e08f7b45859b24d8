-- np_late: late toys and boxes, one row per record, identified by where it
-- is (stream, partition, offset): two late copies of one id are two rows.
-- made_at is the record's instant in whole microseconds plus the nanoseconds
-- below them (0-999). The reader prints it in UTC like record.FormatTime.
SELECT stream, kpartition, koffset, id, line, size, made_us, made_ns
FROM np_classified
WHERE class = 'late'
