-- np_classified: every valid record classified once, first match wins:
-- heartbeat, duplicate, late, item.
--
-- prior_max is the greatest made_at among the valid records of the same
-- (stream, size) before this one (heartbeats, duplicates and late records
-- included). NULL, minus infinity, for the first, which is never late.
-- Late: prior_max - L >= window_end.
SELECT stream, kpartition, koffset, size, id, made_us, made_ns, window_start,
       CASE
         WHEN hb IS TRUE THEN 'heartbeat'
         WHEN id_seq > 1 THEN 'duplicate'
         WHEN (prior_max - {{L}} >= window_start + {{W}}) IS TRUE THEN 'late'
         ELSE 'item'
       END AS class
FROM (
  SELECT stream, kpartition, koffset, size, id, hb, made_us, made_ns, window_start, id_seq,
         MAX(made_us) OVER (PARTITION BY stream, size ORDER BY kpartition, koffset
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior_max
  FROM np_dedup
) clocked
