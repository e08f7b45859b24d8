-- np_dead: dead letters (with the first rule they broke) and duplicates.
SELECT stream, kpartition, koffset, reason
FROM np_checked
WHERE reason IS NOT NULL
UNION ALL
SELECT stream, kpartition, koffset, 'duplicate' AS reason
FROM np_classified
WHERE class = 'duplicate'
