-- np_grammar: every input record, its made_at kept only when it matches the
-- RFC 3339 date-time grammar (the one record.ParseMadeAt checks, its tests
-- hold it to this expression), NULL otherwise, and line_ok, whether its key
-- is a packing line: a size class alone, or a size class, a slash and a hall
-- of 1 to 32 characters of a-z, 0-9 and '-', the first a letter or digit (the
-- grammar record.ValidLine checks, its tests hold it to this expression).
-- line_ok is NULL without a key.
--
-- Input: np_input, one row per Kafka record, built by each engine's wrapper
-- (see risingwave/README.md). Its columns are facts about the raw record, not
-- decisions: obj (the value is UTF-8 text holding exactly one JSON object),
-- made_at, size, id (the member when it is a JSON string, else NULL, id is the
-- stream's id member), hb (the heartbeat member is the JSON literal true),
-- rkey (the Kafka key as text, see risingwave/README.md).
--
-- The grammar is its own step so that each batch engine runs the regular
-- expression once per record: the steps below refer to made_at many times,
-- and a planner that merges subqueries would repeat it for each reference.
SELECT stream, kpartition, koffset, rkey, obj, size, id, hb,
       CASE WHEN regexp_count(made_at, '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$') = 1
            THEN made_at
       END AS made_at,
       regexp_count(rkey, '^(S|M|L|XL)(/[a-z0-9][a-z0-9-]{0,31})?$') = 1 AS line_ok
FROM np_input
