-- np_spare: boxes of rank k > n_toys in a closed window (see np_unpacked).
SELECT b.id AS box_id, b.line, b.size, b.window_start
FROM np_items b
JOIN np_closed c ON c.line = b.line AND c.window_start = b.window_start
WHERE b.stream = 'boxes'
  AND NOT EXISTS (SELECT 1 FROM np_items t
                  WHERE t.stream = 'toys' AND t.line = b.line
                    AND t.window_start = b.window_start AND t.rnk = b.rnk)
