-- np_classified: every valid toy and box classified once, first match wins:
-- late, duplicate, item.
--
-- Late: prior_max - L >= window_end, prior_max being the greatest made_at
-- among the valid records of the same (stream, line) before this one. That
-- is: an earlier record took the watermark past the end of this record's
-- window, so this record comes after the position np_reached gives for its
-- (stream, line, window). Without one it is never late. So within a window
-- the records that are not late come first, by (partition, offset), and the
-- late ones after them.
--
-- Duplicate: not late, and an earlier toy or box of the same (stream, line)
-- and window has the same id (np_dedup's id_seq > 1). Every such earlier
-- record comes before this one in its window, so it is not late either: it is
-- an item or a duplicate, never late, as the contract says.
SELECT d.stream, d.kpartition, d.koffset, d.line, d.size, d.id, d.made_us, d.made_ns, d.window_start,
       CASE
         WHEN (r.kpartition < d.kpartition
               OR (r.kpartition = d.kpartition AND r.koffset < d.koffset)) IS TRUE THEN 'late'
         WHEN d.id_seq > 1 THEN 'duplicate'
         ELSE 'item'
       END AS class
FROM np_dedup d
LEFT JOIN np_reached r ON r.stream = d.stream AND r.line = d.line AND r.window_start = d.window_start
