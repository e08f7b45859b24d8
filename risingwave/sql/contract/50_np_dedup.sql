-- np_dedup: the valid toys and boxes, each with its position among those of
-- its (stream, size) that carry the same id. Heartbeats are left out: they
-- never make a toy or box a duplicate, whatever id they carry, and they only
-- move the watermark (np_clock). Order is (partition, offset): with one
-- partition per (topic, size), as the contract assumes, that is offset order.
SELECT stream, kpartition, koffset, size, id, made_us, made_ns, window_start,
       ROW_NUMBER() OVER (PARTITION BY stream, size, id ORDER BY kpartition, koffset) AS id_seq
FROM np_checked
WHERE reason IS NULL AND hb IS NOT TRUE
