-- np_closed: the windows of lines that hold items and are closed: the
-- watermarks of both (toys, line) and (boxes, line) have reached the window's
-- end, that is a valid record of each has made_at - L >= window_end
-- (np_reached). Only their unpacked toys and spare boxes are final: a window
-- still open once every record is in (no heartbeat closed it) reports its
-- pairs, never its unpacked toys or spare boxes.
SELECT w.line, w.window_start
FROM (SELECT line, window_start FROM np_items GROUP BY line, window_start) w
JOIN np_reached t ON t.stream = 'toys' AND t.line = w.line AND t.window_start = w.window_start
JOIN np_reached b ON b.stream = 'boxes' AND b.line = w.line AND b.window_start = w.window_start
