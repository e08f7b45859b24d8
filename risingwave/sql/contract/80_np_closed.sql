-- np_closed: the windows that hold items and are closed: the watermarks of
-- both (toys, size) and (boxes, size) have reached the window's end. Only
-- their unpacked toys and spare boxes are final.
SELECT w.size, w.window_start
FROM (SELECT size, window_start FROM np_items GROUP BY size, window_start) w
JOIN np_watermark t ON t.stream = 'toys' AND t.size = w.size
JOIN np_watermark b ON b.stream = 'boxes' AND b.size = w.size
WHERE t.watermark_us >= w.window_start + {{W}}
  AND b.watermark_us >= w.window_start + {{W}}
