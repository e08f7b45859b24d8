-- np_blocks: np_clock summarized per block of the tree (see np_levels): one
-- row per (stream, size, partition, level, block), the first offset of a mark
-- in the block.
SELECT stream, size, kpartition, lvl, blk, MIN(koffset) AS koffset
FROM (
  SELECT c.stream, c.size, c.kpartition, l.lvl, c.mark >> l.lvl AS blk, c.koffset
  FROM np_clock c
  JOIN np_levels l ON l.size = c.size
) leveled
GROUP BY stream, size, kpartition, lvl, blk
