-- np_items: the items (toys and boxes that are neither heartbeats, late nor
-- duplicates), ranked 1, 2, 3, ... in (partition, offset) order within their
-- (stream, line, window).
SELECT stream, line, size, window_start, id, kpartition, koffset,
       ROW_NUMBER() OVER (PARTITION BY stream, line, window_start ORDER BY kpartition, koffset) AS rnk
FROM np_classified
WHERE class = 'item'
