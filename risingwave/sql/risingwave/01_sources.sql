-- Kafka sources on the two input topics. ENCODE BYTES delivers each record's
-- value as one bytea column, unparsed: a value that is not JSON still becomes
-- a row (FORMAT PLAIN ENCODE JSON would skip it, losing a dead letter). A
-- record without a value (a tombstone) becomes a row with raw_value NULL.
-- INCLUDE key/partition/offset add where each record is: the key as bytea,
-- partition and offset as varchar (cast in np_input).
-- No WATERMARK clause: a source watermark drops rows behind one global event
-- time, which the contract does not do.
CREATE SOURCE np_toys_source (raw_value bytea)
INCLUDE key AS kkey
INCLUDE partition AS kpartition
INCLUDE offset AS koffset
WITH (
  connector = 'kafka',
  topic = '{{TOYS_TOPIC}}',
  properties.bootstrap.server = '{{BROKERS}}',
  scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE BYTES;

CREATE SOURCE np_boxes_source (raw_value bytea)
INCLUDE key AS kkey
INCLUDE partition AS kpartition
INCLUDE offset AS koffset
WITH (
  connector = 'kafka',
  topic = '{{BOXES_TOPIC}}',
  properties.bootstrap.server = '{{BROKERS}}',
  scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE BYTES;
