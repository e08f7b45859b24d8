-- np_levels: the levels of a tree of blocks over window numbers. With it the
-- steps below find, for each window, the first record that took the
-- watermark past the window's end, without a pass over the earlier records
-- for each record.
--
-- A window's number is floor(window_start / W) + {{NUM0}}, and a record's
-- mark is the number of the window its made_at - L falls in. made_at is
-- within 2^58 µs of the epoch (the years 0000 to 9999) and so is made_at - L,
-- so with R = ceil(2^58 / W) every number is within R of {{NUM0}} =
-- 3 × 2^({{LEVELS}} - 1), where 2^({{LEVELS}} - 1) > R: between 2^{{LEVELS}} and
-- 2^({{LEVELS}} + 1), and any two numbers first differ at a bit below
-- {{LEVELS}} (contractsql.TreeOf). At level j, block b holds the numbers n
-- with n >> j = b, 2^j consecutive numbers. The numbers above n are covered,
-- without overlap, by one block for each level j at which bit j of n is 0:
-- block (n >> j) + 1 (a number m above n lies in it for the highest bit j
-- where m and n differ). So the first record with a number above n is the
-- first of at most {{LEVELS}} blocks, each found by equal columns. A wider
-- window needs fewer levels, and every step below costs in proportion to them.
--
-- One row per size class and level, 0 to {{LEVELS}} - 1. A streaming query in
-- RisingWave joins only on equal columns (a join on none is a nested-loop
-- join, which it refuses), so the levels are listed once per size and joined
-- on the size of a line: the lines are not known in advance, their sizes are.
WITH levels AS (
  SELECT 0 AS lvl UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
  UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9
  UNION ALL SELECT 10 UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL SELECT 13 UNION ALL SELECT 14
  UNION ALL SELECT 15 UNION ALL SELECT 16 UNION ALL SELECT 17 UNION ALL SELECT 18 UNION ALL SELECT 19
  UNION ALL SELECT 20 UNION ALL SELECT 21 UNION ALL SELECT 22 UNION ALL SELECT 23 UNION ALL SELECT 24
  UNION ALL SELECT 25 UNION ALL SELECT 26 UNION ALL SELECT 27 UNION ALL SELECT 28 UNION ALL SELECT 29
  UNION ALL SELECT 30 UNION ALL SELECT 31 UNION ALL SELECT 32 UNION ALL SELECT 33 UNION ALL SELECT 34
  UNION ALL SELECT 35 UNION ALL SELECT 36 UNION ALL SELECT 37 UNION ALL SELECT 38 UNION ALL SELECT 39
  UNION ALL SELECT 40 UNION ALL SELECT 41 UNION ALL SELECT 42 UNION ALL SELECT 43 UNION ALL SELECT 44
  UNION ALL SELECT 45 UNION ALL SELECT 46 UNION ALL SELECT 47 UNION ALL SELECT 48 UNION ALL SELECT 49
  UNION ALL SELECT 50 UNION ALL SELECT 51 UNION ALL SELECT 52 UNION ALL SELECT 53 UNION ALL SELECT 54
  UNION ALL SELECT 55 UNION ALL SELECT 56 UNION ALL SELECT 57 UNION ALL SELECT 58 UNION ALL SELECT 59
),
used AS (
  SELECT lvl FROM levels WHERE lvl < {{LEVELS}}
)
SELECT 'S' AS size, lvl FROM used
UNION ALL SELECT 'M' AS size, lvl FROM used
UNION ALL SELECT 'L' AS size, lvl FROM used
UNION ALL SELECT 'XL' AS size, lvl FROM used
