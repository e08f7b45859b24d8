-- np_watermark: the watermark of each (stream, size), the greatest made_at of
-- its valid records (heartbeats, duplicates and late records included) minus
-- L. A (stream, size) without a valid record has no row: its watermark is
-- minus infinity and closes nothing.
SELECT stream, size, MAX(made_us) - {{L}} AS watermark_us
FROM np_checked
WHERE reason IS NULL
GROUP BY stream, size
