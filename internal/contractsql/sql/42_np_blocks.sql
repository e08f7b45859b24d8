-- np_blocks: np_clock summarized per block of the tree (see np_levels): one
-- row per (stream, line, partition, level, block), the first offset of a mark
-- in the block.
--
-- Only the blocks a window looks up: window n looks up block (n >> j) + 1 at
-- the levels j where bit j of n is 0, so always an odd block, which holds the
-- marks whose bit j is 1. The other marks make no row at that level. That
-- halves the rows on average, and drops most of the levels above the input's
-- range of made_at, where every number's bits are those of {{NUM0}}, 0 but
-- for the top one.
SELECT stream, line, kpartition, lvl, blk, MIN(koffset) AS koffset
FROM (
  SELECT c.stream, c.line, c.kpartition, l.lvl, c.mark >> l.lvl AS blk, c.koffset
  FROM np_clock c
  JOIN np_levels l ON l.size = c.size
  WHERE (c.mark >> l.lvl) % 2 = 1
) leveled
GROUP BY stream, line, kpartition, lvl, blk
