-- np_reached: for each (stream, size, window) of np_reach, the first position,
-- by (partition, offset), at which the watermark of (stream, size) passed the
-- window's end. The toys or boxes of that window after it are late, and the
-- window is closed when both streams have a row.
SELECT r.stream, r.size, r.window_start, r.kpartition, r.koffset
FROM np_reach r
JOIN (SELECT stream, size, window_start, MIN(kpartition) AS kpartition
      FROM np_reach
      GROUP BY stream, size, window_start) f
  ON f.stream = r.stream AND f.size = r.size AND f.window_start = r.window_start
 AND f.kpartition = r.kpartition
