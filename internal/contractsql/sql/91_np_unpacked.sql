-- np_unpacked: toys of rank k > n_boxes in a closed window. Box ranks are
-- exactly 1 .. n_boxes, so "rank > n_boxes" is "no box has this rank".
SELECT t.id AS toy_id, t.line, t.size, t.window_start
FROM np_items t
JOIN np_closed c ON c.line = t.line AND c.window_start = t.window_start
WHERE t.stream = 'toys'
  AND NOT EXISTS (SELECT 1 FROM np_items b
                  WHERE b.stream = 'boxes' AND b.line = t.line
                    AND b.window_start = t.window_start AND b.rnk = t.rnk)
