-- np_packed: the toy of rank k goes into the box of rank k of the same size
-- and window. Final as soon as both exist: ranks never change.
SELECT t.id AS toy_id, b.id AS box_id, t.size, t.window_start
FROM np_items t
JOIN np_items b ON b.size = t.size AND b.window_start = t.window_start AND b.rnk = t.rnk
WHERE t.stream = 'toys' AND b.stream = 'boxes'
