package sparkbloom

import org.apache.spark.sql.{DataFrame, SparkSession}

/** A table with one column of every type a bloom filter supports, including -0.0, 0.0, NaN and NULLs. */
object AllTypesData {
  val columns: Seq[String] =
    Seq("b", "s", "i", "l", "f", "d", "str", "bin", "dt", "ts", "ntz", "dec_i", "dec_l", "dec_f")

  def frame(spark: SparkSession, rows: Int = 2000): DataFrame = spark.sql(
    s"""SELECT CAST(id % 200 - 100 AS TINYINT) AS b,
       |  CAST(id * 7 - 5000 AS SMALLINT) AS s,
       |  CAST((id * 1000003) % 2000000000 - 1000000000 AS INT) AS i,
       |  id * 10000000019 - 42 AS l,
       |  CAST(id / 7.0 - 10 AS FLOAT) AS f,
       |  id / 3.0D - 100 AS d,
       |  concat('värde-', id) AS str,
       |  CAST(concat('b', id * 13) AS BINARY) AS bin,
       |  date_add(DATE'1999-12-25', CAST(id AS INT) * 3) AS dt,
       |  timestamp_micros(1700000000000000 + id * 1000001 - 500000000) AS ts,
       |  CAST(timestamp_micros(1600000000000000 + id * 999) AS TIMESTAMP_NTZ) AS ntz,
       |  CAST((id % 1000) * 1.37 - 500 AS DECIMAL(5, 2)) AS dec_i,
       |  CAST(id * 12345.67 - 9999999 AS DECIMAL(15, 2)) AS dec_l,
       |  CAST(id * 1234567890.12345 - 99999999999 AS DECIMAL(30, 5)) AS dec_f
       |FROM range($rows)
       |UNION ALL
       |SELECT NULL, NULL, NULL, NULL, f, d, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
       |FROM VALUES (CAST('-0.0' AS FLOAT), CAST('-0.0' AS DOUBLE)), (CAST(0.0 AS FLOAT), 0.0D),
       |  (CAST('NaN' AS FLOAT), CAST('NaN' AS DOUBLE)),
       |  (NULL, NULL) AS special(f, d)
       |""".stripMargin)
}
