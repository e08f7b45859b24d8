-- np_checked: every input record with the contract's validity rule decided,
-- its packing line (the key, for a valid record) and its made_at in
-- microseconds.
--
-- The reason is the first rule that fails, in record.Parse's order: malformed
-- json, bad made_at, bad size, size not key (the key's size part, the key up
-- to its first slash, is the size exactly when the key is the size or starts
-- with the size and a slash, as no size class holds a slash), bad line (the
-- key is no packing line, np_grammar's line_ok), no id. Every test
-- is written "(condition) IS NOT TRUE" so that a NULL (a missing member, or an
-- expression error, which RisingWave turns into NULL in streaming) makes a
-- dead letter, never a valid record. reason IS NULL means valid.
--
-- made_us: made_at in whole microseconds since the epoch. The fraction is
-- truncated to microseconds and added to whole seconds, which makes it a
-- floor, also before 1970. made_ns (0-999) is what the truncation dropped, for
-- the late rows' made_at.
--
-- window_start is floor(made_us / W) * W. SQL's % truncates toward zero, so
-- ((x % W) + W) % W is the non-negative remainder, also before 1970.
SELECT stream, kpartition, koffset, line, size, id, hb, made_us, made_ns, reason,
       made_us - (((made_us % {{W}}) + {{W}}) % {{W}}) AS window_start
FROM (
  SELECT stream, kpartition, koffset, rkey AS line, size, id, hb, made_us, made_ns,
         CASE
           WHEN obj IS NOT TRUE THEN 'malformed json'
           WHEN (made_us IS NOT NULL AND m_day <= m_days_in_month) IS NOT TRUE THEN 'bad made_at'
           WHEN (size IN ('S', 'M', 'L', 'XL')) IS NOT TRUE THEN 'bad size'
           WHEN (size = rkey OR substr(rkey, 1, length(size) + 1) = size || '/') IS NOT TRUE THEN 'size not key'
           WHEN line_ok IS NOT TRUE THEN 'bad line'
           WHEN (hb IS TRUE OR length(id) > 0) IS NOT TRUE THEN 'no id'
         END AS reason
  FROM (
    SELECT stream, kpartition, koffset, rkey, line_ok, obj, size, id, hb, m_day,
           CASE
             WHEN m_month IN (4, 6, 9, 11) THEN 30
             WHEN m_month = 2 THEN
               CASE WHEN m_year % 4 = 0 AND (m_year % 100 <> 0 OR m_year % 400 = 0) THEN 29 ELSE 28 END
             ELSE 31
           END AS m_days_in_month,
           -- days_from_civil (H. Hinnant) on the year shifted by 400 (one
           -- Gregorian cycle, 146097 days) so that every operand of / is
           -- non-negative and truncation is a floor. March is month 0 so that
           -- February's leap day comes last. 719468 days from 0000-03-01 to
           -- 1970-01-01.
           ((365 * m_shifted_year + m_shifted_year / 4 - m_shifted_year / 100 + m_shifted_year / 400
             + (153 * ((m_month + 9) % 12) + 2) / 5 + m_day - 1 - 719468 - 146097) * 86400
            + m_hour * 3600 + m_minute * 60 + m_second - m_offset_seconds) * 1000000
           + CAST(substr(m_fraction, 1, 6) AS bigint) AS made_us,
           CAST(substr(m_fraction, 7, 3) AS bigint) AS made_ns
    FROM (
      SELECT stream, kpartition, koffset, rkey, line_ok, obj, size, id, hb,
             m_year, m_month, m_day, m_hour, m_minute, m_second, m_offset_seconds, m_fraction,
             m_year + 400 - CASE WHEN m_month <= 2 THEN 1 ELSE 0 END AS m_shifted_year
      FROM np_fields
    ) shifted
  ) civil
) checked
