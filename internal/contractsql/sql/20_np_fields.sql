-- np_fields: the digits of a made_at that matched the grammar, as integers
-- (NULL when it did not). The grammar fixes every position: YYYY-MM-DDTHH:MM:SS
-- is 19 characters, then an optional fraction after a '.', then 'Z'/'z' or an
-- offset of 6 characters, '+hh:mm' or '-hh:mm'.
--
-- No engine's own timestamp parser takes part: each is looser or stricter
-- than RFC 3339 (PostgreSQL refuses year 0000, RisingWave accepts a space for
-- the 'T'), and every engine can take digits out of a string.
SELECT stream, kpartition, koffset, rkey, line_ok, obj, size, id, hb, made_at,
       CAST(substr(made_at, 1, 4) AS bigint) AS m_year,
       CAST(substr(made_at, 6, 2) AS bigint) AS m_month,
       CAST(substr(made_at, 9, 2) AS bigint) AS m_day,
       CAST(substr(made_at, 12, 2) AS bigint) AS m_hour,
       CAST(substr(made_at, 15, 2) AS bigint) AS m_minute,
       CAST(substr(made_at, 18, 2) AS bigint) AS m_second,
       CASE WHEN m_zone_length = 1 THEN 0
            ELSE (CAST(substr(made_at, length(made_at) - 4, 2) AS bigint) * 3600
                  + CAST(substr(made_at, length(made_at) - 1, 2) AS bigint) * 60)
                 * CASE WHEN substr(made_at, length(made_at) - 5, 1) = '-' THEN -1 ELSE 1 END
       END AS m_offset_seconds,
       -- The fraction's digits padded to nine: the first six are the
       -- microseconds, the next three the nanoseconds below them. Digits
       -- beyond nine are dropped, as Go drops them.
       substr(CASE WHEN substr(made_at, 20, 1) = '.'
                   THEN substr(made_at, 21, length(made_at) - 20 - m_zone_length)
                   ELSE ''
              END || '000000000', 1, 9) AS m_fraction
FROM (
  SELECT stream, kpartition, koffset, rkey, line_ok, obj, size, id, hb, made_at,
         CASE WHEN substr(made_at, length(made_at), 1) IN ('Z', 'z') THEN 1 ELSE 6 END AS m_zone_length
  FROM np_grammar
) zoned
