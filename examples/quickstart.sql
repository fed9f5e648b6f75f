-- sparkbloom in SQL only: a Parquet table, a bloom index on two columns, lookups, the index's state.
--
-- With spark-sql (the properties file gives Spark sparkbloom's jars, extension and JVM flags):
--   python -m sparkbloom conf > /tmp/sparkbloom.conf
--   spark-sql --properties-file /tmp/sparkbloom.conf -f examples/quickstart.sql
-- Or statement by statement with spark.sql(...) in a session built with sparkbloom.configure(builder).

DROP TABLE IF EXISTS sparkbloom_quickstart;

-- 20 Parquet files; user_id is scattered over all of them, so min/max statistics cannot skip any.
CREATE TABLE sparkbloom_quickstart USING parquet AS
SELECT (id * 7919) % 200000 AS user_id, concat('session-', id) AS session, id % 7 AS kind
FROM range(0, 200000, 1, 20);

-- false_reads_per_key = 0.1 is the default: ~0.1 row groups read in error per looked-up value, whatever
-- the table size; a column can instead fix its fpp per row group.
CREATE BLOOM INDEX IF NOT EXISTS quickstart_keys
ON sparkbloom_quickstart (user_id, session OPTIONS (fpp = 0.01))
OPTIONS (false_reads_per_key = 0.1);

SHOW BLOOM INDEXES ON sparkbloom_quickstart;

DESCRIBE BLOOM INDEX quickstart_keys ON sparkbloom_quickstart;

-- Point and IN lookups: only files whose filters might hold the values are read.
SELECT * FROM sparkbloom_quickstart WHERE user_id = 4242;

SELECT * FROM sparkbloom_quickstart WHERE session IN ('session-7', 'session-199999', 'no-such-session');

-- The same lookup with skipping switched off: same rows, every file read.
SET spark.sparkbloom.enabled = false;
SELECT * FROM sparkbloom_quickstart WHERE user_id = 4242;
SET spark.sparkbloom.enabled = true;

-- New files are read until the index covers them; INCREMENTAL indexes only what changed.
INSERT INTO sparkbloom_quickstart SELECT 200000 + id, concat('session-', 200000 + id), 0 FROM range(0, 1000);
REFRESH BLOOM INDEX quickstart_keys ON sparkbloom_quickstart INCREMENTAL;

DROP BLOOM INDEX IF EXISTS quickstart_keys ON sparkbloom_quickstart;
DROP TABLE sparkbloom_quickstart;
