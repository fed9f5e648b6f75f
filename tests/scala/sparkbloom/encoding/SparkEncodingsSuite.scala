package sparkbloom.encoding

import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.hash.ColumnEncoding
import sparkbloom.testing.TestShims.{assumeCollations, collatedString}

/** The physical encoding Spark's Parquet writer uses for each Spark type. */
class SparkEncodingsSuite extends AnyFunSuite {
  import SparkEncodings.writtenBy

  test("integral types, dates, floating types, strings and binary map to their Parquet physical types") {
    assert(writtenBy(ByteType).contains(ColumnEncoding("INT32", "INT(8,true)", 0)))
    assert(writtenBy(ShortType).contains(ColumnEncoding("INT32", "INT(16,true)", 0)))
    assert(writtenBy(IntegerType).contains(ColumnEncoding.Int32))
    assert(writtenBy(DateType).contains(ColumnEncoding.Date))
    assert(writtenBy(LongType).contains(ColumnEncoding.Int64))
    assert(writtenBy(FloatType).contains(ColumnEncoding.Float))
    assert(writtenBy(DoubleType).contains(ColumnEncoding.Double))
    assert(writtenBy(StringType).contains(ColumnEncoding.String))
    assert(writtenBy(BinaryType).contains(ColumnEncoding.Binary))
  }

  test("collated strings map to Parquet strings too") {
    assumeCollations()
    assert(writtenBy(collatedString("UTF8_LCASE")).contains(ColumnEncoding.String))
  }

  test("timestamps follow spark.sql.parquet.outputTimestampType; TIMESTAMP_NTZ is always INT64 micros") {
    assert(writtenBy(TimestampType).contains(ColumnEncoding.Int96))
    assert(writtenBy(TimestampType, "INT96").contains(ColumnEncoding.Int96))
    assert(writtenBy(TimestampType, "TIMESTAMP_MICROS").contains(ColumnEncoding.timestamp("MICROS", utc = true)))
    assert(writtenBy(TimestampType, "TIMESTAMP_MILLIS").contains(ColumnEncoding.timestamp("MILLIS", utc = true)))
    for (t <- Seq("INT96", "TIMESTAMP_MILLIS"))
      assert(writtenBy(TimestampNTZType, t).contains(ColumnEncoding.timestamp("MICROS", utc = false)))
  }

  test("decimals are INT32 up to 9 digits, INT64 up to 18, then FIXED_LEN_BYTE_ARRAY of the minimal width") {
    assert(writtenBy(DecimalType(9, 2)).contains(ColumnEncoding.decimal("INT32", 9, 2)))
    assert(writtenBy(DecimalType(10, 2)).contains(ColumnEncoding.decimal("INT64", 10, 2)))
    assert(writtenBy(DecimalType(18, 0)).contains(ColumnEncoding.decimal("INT64", 18, 0)))
    assert(writtenBy(DecimalType(19, 0)).contains(ColumnEncoding.decimal("FIXED_LEN_BYTE_ARRAY", 19, 0, 9)))
    assert(writtenBy(DecimalType(38, 10)).contains(ColumnEncoding.decimal("FIXED_LEN_BYTE_ARRAY", 38, 10, 16)))
  }

  test("the legacy format writes every decimal as FIXED_LEN_BYTE_ARRAY") {
    assert(writtenBy(DecimalType(5, 2), legacyDecimal = true).contains(ColumnEncoding.decimal("FIXED_LEN_BYTE_ARRAY", 5,
      2, 3)))
    assert(writtenBy(DecimalType(15, 2), legacyDecimal = true).contains(ColumnEncoding.decimal("FIXED_LEN_BYTE_ARRAY",
      15, 2, 7)))
  }

  test("BOOLEAN and nested types have no encoding, with a reason that names the type") {
    for (dt <- Seq(BooleanType, ArrayType(IntegerType), MapType(StringType, IntegerType),
        StructType(Seq(StructField("a", IntegerType))), CalendarIntervalType, NullType)) {
      assert(writtenBy(dt).isEmpty, dt)
      assert(!SparkEncodings.indexable(dt), dt)
    }
    assert(SparkEncodings.unsupportedReason(BooleanType).contains("BOOLEAN"))
    assert(SparkEncodings.unsupportedReason(ArrayType(IntegerType)).contains("array<int>"))
  }
}
