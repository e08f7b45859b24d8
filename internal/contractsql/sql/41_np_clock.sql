-- np_clock: where each (stream, line)'s watermark went. A valid record's mark
-- is the number (see np_levels) of the window its made_at - L falls in:
-- made_at - L >= window_end exactly for the windows numbered below the mark,
-- the windows the record takes the watermark past. Every valid record
-- counts, heartbeats, duplicates and late records included, as in prior_max.
--
-- One row per (stream, line, partition, mark): its first offset. The records
-- of one window share a mark, so the steps below change once per mark, not
-- once per record. "The first" is ROW_NUMBER() = 1 rather than MIN: RisingWave
-- plans it as a Top-N per group, which says nothing when a later offset comes,
-- where MIN's group would also count the record and pass an update on.
SELECT stream, line, size, kpartition, mark, koffset
FROM (
  SELECT stream, line, size, kpartition, koffset, mark,
         ROW_NUMBER() OVER (PARTITION BY stream, line, kpartition, mark ORDER BY koffset) AS seq
  FROM (
    SELECT stream, line, size, kpartition, koffset,
           (wm - (((wm % {{W}}) + {{W}}) % {{W}})) / {{W}} + {{NUM0}} AS mark
    FROM (
      SELECT stream, line, size, kpartition, koffset, made_us - {{L}} AS wm
      FROM np_checked
      WHERE reason IS NULL
    ) valid
  ) marked
) numbered
WHERE seq = 1
