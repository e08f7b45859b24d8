-- np_reached: for each (stream, line, window) of np_reach, the first position,
-- by (partition, offset), at which the watermark of (stream, line) passed the
-- window's end. The toys or boxes of that window after it are late, and the
-- window is closed when both streams have a row.
SELECT r.stream, r.line, r.window_start, r.kpartition, r.koffset
FROM np_reach r
JOIN (SELECT stream, line, window_start, MIN(kpartition) AS kpartition
      FROM np_reach
      GROUP BY stream, line, window_start) f
  ON f.stream = r.stream AND f.line = r.line AND f.window_start = r.window_start
 AND f.kpartition = r.kpartition
