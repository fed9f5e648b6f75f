package sparkbloom.encoding

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow

import sparkbloom.hash.PlainHash
import sparkbloom.testing.SparkSessionSuite
import sparkbloom.testing.TestShims.assumeCollations
import sparkbloom.{AllTypesData, SparkWrittenFilters}
import sparkbloom.sbbf.Sbbf

/**
 * The decisive check of the encodings: Spark writes a Parquet file with parquet-java bloom filters, and a
 * filter rebuilt from ValueHasher over the same Catalyst values is byte-identical, for every type.
 */
class SparkWrittenHashesSuite extends SparkSessionSuite {
  private val NumBytes = 4096

  private def internalRows(df: DataFrame): Array[InternalRow] = df.queryExecution.toRdd.map(_.copy()).collect()

  /** Writes `df`, then rebuilds each column's filter from hashWritten and compares bytes. */
  private def check(df: DataFrame, columns: Seq[String], settingsLabel: String, timestampType: String = "INT96",
                    legacy: Boolean = false): Unit = withTempDir { dir =>
    val written = SparkWrittenFilters.write(df, dir, columns, NumBytes)
    val rows = internalRows(df)
    for (c <- columns) {
      val i = df.schema.fieldIndex(c)
      val dt = df.schema(i).dataType
      val enc = SparkEncodings.writtenBy(dt, timestampType, legacy).get
      val file = written.getOrElse(c, fail(s"$settingsLabel: parquet-java wrote no filter for $c"))
      val physical = file.physicalType.getPrimitiveTypeName.name match { case "BINARY" => "BYTE_ARRAY"; case p => p }
      assert(physical == enc.physical, s"$settingsLabel $c")
      if (enc.typeLength > 0) assert(file.physicalType.getTypeLength == enc.typeLength, s"$settingsLabel $c")
      val ours = Sbbf.empty(NumBytes)
      val values = rows.flatMap(r => if (r.isNullAt(i)) None else Some(r.get(i, dt)))
      values.foreach(v => ours.insert(ValueHasher.hashWritten(v, dt, enc).longValue()))
      assert(java.util.Arrays.equals(ours.toBytes, file.filter.toBytes), s"$settingsLabel: bitset of $c ($dt as $enc)")
      for (v <- values) {
        val probe = ValueHasher.hashes(v, dt, enc)
        assert(probe == null || file.filter.mightContainAny(probe), s"$settingsLabel: $c value $v must be found")
      }
    }
  }

  test("every supported type, as Spark writes it by default, hashes to the filter parquet-java wrote") {
    check(AllTypesData.frame(spark), AllTypesData.columns, "defaults")
  }

  test("timestamps written as INT64 micros and as millis hash to the filters parquet-java wrote") {
    for (t <- Seq("TIMESTAMP_MICROS", "TIMESTAMP_MILLIS"))
      withSQLConf("spark.sql.parquet.outputTimestampType" -> t) {
        check(AllTypesData.frame(spark, 500), Seq("ts", "ntz"), t, timestampType = t)
      }
  }

  test("decimals written in the legacy format (all FIXED_LEN_BYTE_ARRAY) hash to the filters parquet-java wrote") {
    withSQLConf("spark.sql.parquet.writeLegacyFormat" -> "true") {
      check(AllTypesData.frame(spark, 500), Seq("dec_i", "dec_l", "dec_f"), "legacy", legacy = true)
    }
  }

  test("collated strings are written as their bytes") {
    assumeCollations()
    val df = spark.sql("SELECT CAST(concat('Ab', id) AS STRING COLLATE UTF8_LCASE) AS c FROM range(300)")
    check(df, Seq("c"), "UTF8_LCASE")
  }

  test("floating zeros and NaN: each written value is found, a probe for either zero finds both, NaN is never pruned") {
    withTempDir { dir =>
      val df = spark.sql("SELECT CAST('-0.0' AS FLOAT) AS f, CAST('NaN' AS DOUBLE) AS d")
      val written = SparkWrittenFilters.write(df, dir, Seq("f", "d"), 32)
      val f = written("f").filter
      val floatEnc = SparkEncodings.writtenBy(org.apache.spark.sql.types.FloatType).get
      assert(f.mightContain(PlainHash.float(-0.0f)))
      assert(!f.mightContain(PlainHash.float(0.0f)), "only -0.0 was written")
      assert(f.mightContainAny(ValueHasher.hashes(0.0f, org.apache.spark.sql.types.FloatType, floatEnc)))
      assert(ValueHasher.hashes(Double.NaN, org.apache.spark.sql.types.DoubleType,
        SparkEncodings.writtenBy(org.apache.spark.sql.types.DoubleType).get) == null)
      assert(written("d").filter.mightContain(PlainHash.double(Double.NaN)))
    }
  }
}
