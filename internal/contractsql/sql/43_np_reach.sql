-- np_reach: for each window that holds a valid toy or box, for each stream and
-- each partition that holds that stream's records of the line, the first
-- offset at which a record took the watermark of (stream, line) past the
-- window's end: the first offset of the blocks above the window's number (see
-- np_levels). The windows come from both streams, so that a window with toys
-- only also learns whether the boxes' watermark passed it. A window never
-- passed has no row.
SELECT b.stream, q.line, q.window_start, b.kpartition, MIN(b.koffset) AS koffset
FROM (
  SELECT w.line, w.window_start, l.lvl, (w.num >> l.lvl) + 1 AS blk
  FROM (
    SELECT line, size, window_start, window_start / {{W}} + {{NUM0}} AS num
    FROM np_checked
    WHERE reason IS NULL AND hb IS NOT TRUE
    GROUP BY line, size, window_start
  ) w
  JOIN np_levels l ON l.size = w.size
  WHERE (w.num >> l.lvl) % 2 = 0
) q
JOIN np_blocks b ON b.line = q.line AND b.lvl = q.lvl AND b.blk = q.blk
GROUP BY b.stream, q.line, q.window_start, b.kpartition
