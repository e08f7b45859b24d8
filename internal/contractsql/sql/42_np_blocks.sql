-- np_blocks: np_clock summarized per block of the tree (see np_levels): one
-- row per (stream, line, partition, level, block), the first offset of a mark
-- in the block.
SELECT stream, line, kpartition, lvl, blk, MIN(koffset) AS koffset
FROM (
  SELECT c.stream, c.line, c.kpartition, l.lvl, c.mark >> l.lvl AS blk, c.koffset
  FROM np_clock c
  JOIN np_levels l ON l.size = c.size
) leveled
GROUP BY stream, line, kpartition, lvl, blk
