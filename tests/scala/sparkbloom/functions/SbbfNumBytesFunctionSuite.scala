package sparkbloom.functions

import sparkbloom.testing.SparkSessionSuite

/** sbbf_num_bytes through SQL. */
class SbbfNumBytesFunctionSuite extends SparkSessionSuite {

  test("constant arguments reproduce the spec's size table") {
    val rows =
      Seq((10000, "0.1", 8192), (10000, "0.01", 16384), (100000, "0.001", 262144), (1000000, "0.000001", 8388608))
    for ((ndv, fpp, bytes) <- rows)
      assert(sql(s"SELECT sbbf_num_bytes($ndv, $fpp)").head().getInt(0) == bytes, s"$ndv at $fpp")
  }

  test("ndv may come from a column, fpp may be a DOUBLE or DECIMAL literal; the result is an INT") {
    val df = sql(
      "SELECT n, sbbf_num_bytes(n, 0.01D) AS a, sbbf_num_bytes(n, 0.01) AS b FROM VALUES (0L), (100L), (10000L) AS " +
        "t(n)")
    assert(df.schema("a").dataType == org.apache.spark.sql.types.IntegerType)
    assert(df.collect().map(r => (r.getLong(0), r.getInt(1), r.getInt(2))).toSeq ==
      Seq((0L, 32, 32), (100L, 128, 128), (10000L, 16384, 16384)))
  }

  test("very large ndv is clamped to 128 MiB") {
    assert(sql("SELECT sbbf_num_bytes(9223372036854775807, 0.01)").head().getInt(0) == 134217728)
  }

  test("NULL arguments give NULL") {
    assert(sql("SELECT sbbf_num_bytes(NULL, 0.01)").head().isNullAt(0))
    assert(sql("SELECT sbbf_num_bytes(100, CAST(NULL AS DOUBLE))").head().isNullAt(0))
  }

  test("a negative ndv from a column fails at run time with a clear message") {
    val e = intercept[Exception](sql("SELECT sbbf_num_bytes(n, 0.01) FROM VALUES (-5L) AS t(n)").collect())
    assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(
        _.getMessage.contains("ndv must not be negative")))
  }
}
