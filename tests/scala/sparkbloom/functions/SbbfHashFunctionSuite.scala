package sparkbloom.functions

import sparkbloom.testing.SparkSessionSuite
import sparkbloom.{AllTypesData, SparkWrittenFilters}
import sparkbloom.TestSupport.u64
import sparkbloom.hash.PlainHash
import sparkbloom.sbbf.Sbbf

/** sbbf_hash through SQL: known hashes per type, the session's timestamp encoding, and files Spark writes. */
class SbbfHashFunctionSuite extends SparkSessionSuite {

  private def hashOf(expr: String): Any = sql(s"SELECT sbbf_hash($expr)").head().get(0)

  test("literals hash to the known xxHash64 of their plain encoding") {
    assert(hashOf("CAST(42 AS INT)") == u64("d756d7b62fc50bf1"))
    assert(hashOf("42") == u64("d756d7b62fc50bf1"), "an integer literal is an INT")
    assert(hashOf("42L") == u64("b556806fb6d14353"))
    assert(hashOf("CAST(-1 AS TINYINT)") == u64("7f78e4bda3addf93"), "TINYINT is written as INT32")
    assert(hashOf("CAST(1.5 AS FLOAT)") == u64("4f2d82595c483a0d"))
    assert(hashOf("1.0D") == u64("949522f153a1a395"))
    assert(hashOf("'hello'") == u64("26c7827d889f6da3"))
    assert(hashOf("''") == u64("ef46db3751d8e999"))
    assert(hashOf("X'68656c6c6f'") == u64("26c7827d889f6da3"), "BINARY hashes its bytes like STRING")
  }

  test("-0.0 and NaN hash their own bits") {
    assert(hashOf("CAST('-0.0' AS DOUBLE)") == u64("3f425eacf01544e0"))
    assert(hashOf("CAST('-0.0' AS FLOAT)") == u64("822e51211bf08373"))
    assert(hashOf("CAST('NaN' AS DOUBLE)") == u64("e9adb09fee122aac"))
    assert(hashOf("CAST('NaN' AS FLOAT)") == u64("d65166e46df1863e"))
  }

  test("NULL hashes to NULL and the result is a BIGINT") {
    assert(hashOf("CAST(NULL AS INT)") == null)
    assert(hashOf("NULL") == null)
    assert(sql("SELECT sbbf_hash(1)").schema.head.dataType == org.apache.spark.sql.types.LongType)
  }

  test("decimals hash in the physical type Spark writes for their precision") {
    assert(hashOf("CAST(1.23 AS DECIMAL(5, 2))") == PlainHash.int32(123))
    assert(hashOf("CAST(1.00 AS DECIMAL(10, 2))") == PlainHash.int64(100))
    assert(hashOf("CAST(-1.23 AS DECIMAL(20, 2))") == PlainHash.fixedDecimal(-123L, 9, new Array[Byte](9)))
    withSQLConf("spark.sql.parquet.writeLegacyFormat" -> "true") {
      assert(hashOf("CAST(1.00 AS DECIMAL(10, 2))") == PlainHash.fixedDecimal(100L, 5, new Array[Byte](5)))
    }
  }

  test("dates and timestamps follow the session's spark.sql.parquet.outputTimestampType") {
    assert(hashOf("DATE'1970-01-11'") == PlainHash.int32(10))
    val micros = 1700000000123456L
    val ts = s"timestamp_micros($micros)"
    assert(hashOf(ts) == PlainHash.int96((micros % 86400000000L) * 1000, (micros / 86400000000L).toInt + 2440588,
      new Array[Byte](12)), "INT96 by default")
    withSQLConf("spark.sql.parquet.outputTimestampType" -> "TIMESTAMP_MICROS") {
      assert(hashOf(ts) == PlainHash.int64(micros))
    }
    withSQLConf("spark.sql.parquet.outputTimestampType" -> "TIMESTAMP_MILLIS") {
      assert(hashOf(ts) == PlainHash.int64(micros / 1000))
    }
    assert(hashOf(s"CAST($ts AS TIMESTAMP_NTZ)") != null)
  }

  test("inserting sbbf_hash of every row rebuilds the filter parquet-java wrote for each column") {
    withTempDir { dir =>
      val df = AllTypesData.frame(spark, 1000)
      val written = SparkWrittenFilters.write(df, dir, AllTypesData.columns, 2048)
      df.createOrReplaceTempView("all_types")
      for (c <- AllTypesData.columns) {
        val f = Sbbf.empty(2048)
        sql(s"SELECT sbbf_hash($c) FROM all_types WHERE $c IS NOT NULL").collect().foreach(r => f.insert(r.getLong(0)))
        assert(f == written(c).filter, s"column $c")
      }
    }
  }
}
