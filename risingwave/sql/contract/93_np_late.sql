-- np_late: late toys and boxes. made_at is the record's instant in whole
-- microseconds plus the nanoseconds below them (0-999). The reader prints it
-- in UTC like record.FormatTime.
SELECT stream, id, size, made_us, made_ns
FROM np_classified
WHERE class = 'late'
