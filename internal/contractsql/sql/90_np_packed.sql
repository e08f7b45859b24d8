-- np_packed: the toy of rank k goes into the box of rank k of the same line
-- and window. Once every record is in, these are the contract's pairs. On the
-- way a streaming database can retract a pair and emit another: while a view
-- backfills (it reads the relations it depends on in no particular order), or
-- when records reach it out of (partition, offset) order, a rank or a class
-- is computed before an earlier record is there, and corrected when it comes.
SELECT t.id AS toy_id, b.id AS box_id, t.line, t.size, t.window_start
FROM np_items t
JOIN np_items b ON b.line = t.line AND b.window_start = t.window_start AND b.rnk = t.rnk
WHERE t.stream = 'toys' AND b.stream = 'boxes'
