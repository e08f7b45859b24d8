-- np_dedup: the valid records, each with its position among the records of
-- its (stream, size) that carry the same id. Heartbeats are numbered in a
-- partition of their own (hb is part of the key), so they never make a toy or
-- box a duplicate, whatever id they carry. Order is (partition, offset): with
-- one partition per (topic, size), as the contract assumes, that is offset
-- order.
SELECT stream, kpartition, koffset, size, id, hb, made_us, made_ns, window_start,
       ROW_NUMBER() OVER (PARTITION BY stream, size, hb, id ORDER BY kpartition, koffset) AS id_seq
FROM np_checked
WHERE reason IS NULL
