-- np_dead: dead letters (with the first rule they broke) and duplicates (toys
-- and boxes that are not late and repeat an id of their window).
SELECT stream, kpartition, koffset, reason
FROM np_checked
WHERE reason IS NOT NULL
UNION ALL
SELECT stream, kpartition, koffset, 'duplicate' AS reason
FROM np_classified
WHERE class = 'duplicate'
