-- np_input for RisingWave: the normalized relation the shared contract text
-- reads (see risingwave/README.md), one row per Kafka record of either topic.
-- Facts only, no decision:
--   obj      the value is UTF-8 (convert_from fails, so NULL, otherwise),
--            is one JSON object (IS JSON OBJECT), and RisingWave's jsonb
--            parser accepts it;
--   made_at, size, id
--            the member when it is a JSON string, else NULL; id is toy_id on
--            toys and box_id on boxes. jsonb keeps the last of duplicate
--            members, as Go's encoding/json does;
--   hb       the heartbeat member is the JSON literal true;
--   rkey     the key as text: as UTF-8 when it is UTF-8, else in bytea's
--            escape format (encode(k, 'escape'): a byte with the high bit
--            set becomes a backslash and three octal digits). That keeps
--            every slash in place and puts a backslash, which no size and no
--            hall holds, where the bytes were: it decides as Go does on the
--            bytes ("M/\377" is a bad line, as "M/" and byte 0xff is). NULL
--            without a key.
-- Every expression that can fail yields NULL in a streaming job, and each
-- NULL here leads to a dead letter in np_checked, never to a valid record.
CREATE MATERIALIZED VIEW np_input AS
SELECT stream, kpartition, koffset, rkey,
       COALESCE(jsonb_typeof(doc) = 'object', false) AS obj,
       CASE WHEN jsonb_typeof(doc -> 'made_at') = 'string' THEN doc ->> 'made_at' END AS made_at,
       CASE WHEN jsonb_typeof(doc -> 'size') = 'string' THEN doc ->> 'size' END AS size,
       CASE WHEN jsonb_typeof(doc -> id_field) = 'string' THEN doc ->> id_field END AS id,
       COALESCE(jsonb_typeof(doc -> 'heartbeat') = 'boolean' AND (doc ->> 'heartbeat') = 'true', false) AS hb
FROM (
  SELECT stream, id_field, kpartition, koffset, rkey,
         CASE WHEN txt IS JSON OBJECT THEN CAST(txt AS jsonb) END AS doc
  FROM (
    SELECT 'toys' AS stream, 'toy_id' AS id_field,
           CAST(kpartition AS bigint) AS kpartition, CAST(koffset AS bigint) AS koffset,
           COALESCE(convert_from(kkey, 'UTF8'), encode(kkey, 'escape')) AS rkey, convert_from(raw_value, 'UTF8') AS txt
    FROM np_toys_source
    UNION ALL
    SELECT 'boxes' AS stream, 'box_id' AS id_field,
           CAST(kpartition AS bigint) AS kpartition, CAST(koffset AS bigint) AS koffset,
           COALESCE(convert_from(kkey, 'UTF8'), encode(kkey, 'escape')) AS rkey, convert_from(raw_value, 'UTF8') AS txt
    FROM np_boxes_source
  ) raw
) parsed;
