-- np_dedup: the valid toys and boxes, each with its position among those of
-- its (stream, line) and window that carry the same id: ids are unique within
-- a window only, the same id in two windows is two items. Heartbeats are left
-- out: they never make a toy or box a duplicate, whatever id they carry, and
-- they only move the watermark (np_clock). Order is (partition, offset): with
-- one partition per (topic, line), as the contract assumes, that is offset
-- order.
--
-- Late records are counted too, though an earlier late copy never makes a
-- record a duplicate: the next step decides late first, and within a window
-- every record that is not late comes before every late one, so the earlier
-- copies a record that is not late counts are never late.
SELECT stream, kpartition, koffset, line, size, id, made_us, made_ns, window_start,
       ROW_NUMBER() OVER (PARTITION BY stream, line, window_start, id ORDER BY kpartition, koffset) AS id_seq
FROM np_checked
WHERE reason IS NULL AND hb IS NOT TRUE
