-- np_closed: the windows that hold items and are closed: the watermarks of
-- both (toys, size) and (boxes, size) have reached the window's end, that is
-- a valid record of each has made_at - L >= window_end (np_reached). Only
-- their unpacked toys and spare boxes are final.
SELECT w.size, w.window_start
FROM (SELECT size, window_start FROM np_items GROUP BY size, window_start) w
JOIN np_reached t ON t.stream = 'toys' AND t.size = w.size AND t.window_start = w.window_start
JOIN np_reached b ON b.stream = 'boxes' AND b.size = w.size AND b.window_start = w.window_start
