package sparkbloom.encoding

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.TestSupport.{hex, utf8}
import sparkbloom.hash.{ColumnEncoding, PlainHash}
import sparkbloom.testing.TestShims.{assumeCollations, collatedString}

/** Spark values to the hashes a filter over a column chunk of a given encoding holds (no session needed). */
class ValueHasherSuite extends AnyFunSuite {
  import ValueHasher.{hashes, hashOne, hashWritten, Keep}

  private def one(h: Array[Long]): Long = { assert(h != null && h.length == 1, s"${Option(h).map(_.toSeq)}"); h(0) }

  test("null values and unknown encodings are Keep") {
    assert(hashes(null, IntegerType, ColumnEncoding.Int32) eq Keep)
    assert(hashes(1, IntegerType, null) eq Keep)
    assert(Keep == null)
  }

  test("integral types hash as the physical type of the column, not of the literal") {
    for ((v, dt) <-
        Seq[(Any, DataType)]((7.toByte, ByteType), (7.toShort, ShortType), (7, IntegerType), (7L, LongType))) {
      assert(one(hashes(v, dt, ColumnEncoding.Int64)) == PlainHash.int64(7L), s"$dt into INT64")
    }
    for ((v, dt) <- Seq[(Any, DataType)]((7, IntegerType), (7L, LongType)))
      assert(one(hashes(v, dt, ColumnEncoding.Int32)) == PlainHash.int32(7), s"$dt into INT32")
    assert(one(hashes(-5, IntegerType, ColumnEncoding("INT32", "INT(8,true)", 0))) == PlainHash.int32(-5))
    // Spark reads a wider INT32 column as BYTE / SHORT by narrowing each value (300 reads as 44): only a column
    // annotated that narrow is probed
    assert(one(hashes(7.toByte, ByteType, ColumnEncoding("INT32", "INT(8,true)", 0))) == PlainHash.int32(7))
    assert(one(hashes(7.toShort, ShortType, ColumnEncoding("INT32", "INT(16,true)", 0))) == PlainHash.int32(7))
    assert(one(hashes(7.toShort, ShortType, ColumnEncoding("INT32", "INT(8,true)", 0))) == PlainHash.int32(7))
    assert(hashes(44.toByte, ByteType, ColumnEncoding.Int32) eq Keep)
    assert(hashes(44.toByte, ByteType, ColumnEncoding("INT32", "INT(16,true)", 0)) eq Keep)
    assert(hashes(7.toShort, ShortType, ColumnEncoding.Int32) eq Keep)
  }

  test("a BIGINT too large for an INT32 column cannot be in it but is not hashed as something else") {
    assert(hashes(1L << 40, LongType, ColumnEncoding.Int32) eq Keep)
  }

  test("unsigned and unknown annotations are Keep") {
    assert(hashes(1, IntegerType, ColumnEncoding("INT32", "INT(32,false)", 0)) eq Keep)
    assert(hashes(1L, LongType, ColumnEncoding("INT64", "INT(64,false)", 0)) eq Keep)
    assert(hashes(1, IntegerType, ColumnEncoding("INT32", "TIME(MILLIS,true)", 0)) eq Keep)
    assert(hashes(UTF8String.fromString("x"), StringType, ColumnEncoding("BYTE_ARRAY", "UUID", 0)) eq Keep)
  }

  test("a floating zero gives the hashes of both zeros, in either order of sign") {
    val floatZeros = Set(PlainHash.float(0.0f), PlainHash.float(-0.0f))
    assert(hashes(0.0f, FloatType, ColumnEncoding.Float).toSet == floatZeros)
    assert(hashes(-0.0f, FloatType, ColumnEncoding.Float).toSet == floatZeros)
    assert(hashes(0.0f, FloatType, ColumnEncoding.Float).length == 2)
    val doubleZeros = Set(PlainHash.double(0.0), PlainHash.double(-0.0))
    assert(hashes(0.0, DoubleType, ColumnEncoding.Double).toSet == doubleZeros)
    assert(hashes(-0.0, DoubleType, ColumnEncoding.Double).toSet == doubleZeros)
  }

  test("other floating values give their one hash") {
    assert(one(hashes(1.5f, FloatType, ColumnEncoding.Float)) == PlainHash.float(1.5f))
    assert(one(hashes(-2.25, DoubleType, ColumnEncoding.Double)) == PlainHash.double(-2.25))
    assert(one(hashes(1.5f, FloatType, ColumnEncoding.Double)) == PlainHash.double(1.5),
      "float probed in a double column")
  }

  test("NaN is Keep for probing, in every bit pattern, but is hashed as its bits when written") {
    val nans = Seq(Float.NaN, java.lang.Float.intBitsToFloat(0x7fc00001), java.lang.Float.intBitsToFloat(0xffc00000))
    for (n <- nans) {
      assert(hashes(n, FloatType, ColumnEncoding.Float) eq Keep)
      assert(hashWritten(n, FloatType, ColumnEncoding.Float) == PlainHash.float(n))
    }
    assert(hashes(Double.NaN, DoubleType, ColumnEncoding.Double) eq Keep)
    assert(hashOne(Double.NaN, DoubleType, ColumnEncoding.Double) == null)
    assert(hashWritten(Double.NaN, DoubleType, ColumnEncoding.Double) == PlainHash.double(Double.NaN))
  }

  test("a written zero is hashed with its own sign only") {
    assert(hashWritten(-0.0f, FloatType, ColumnEncoding.Float) == PlainHash.float(-0.0f))
    assert(hashWritten(0.0, DoubleType, ColumnEncoding.Double) == PlainHash.double(0.0))
  }

  test("strings hash their UTF-8 bytes, also when the UTF8String is a slice of a larger array") {
    val s = UTF8String.fromString("héllo wörld")
    assert(one(hashes(s, StringType, ColumnEncoding.String)) == PlainHash.bytes(utf8("héllo wörld")))
    val slice = UTF8String.fromString("xxhelloyy").substring(2, 7)
    assert(slice.toString == "hello")
    assert(one(hashes(slice, StringType, ColumnEncoding.String)) == PlainHash.bytes(utf8("hello")))
    assert(one(hashes(s, StringType, ColumnEncoding.Binary)) == PlainHash.bytes(utf8("héllo wörld")),
      "a string probed in an unannotated BYTE_ARRAY column")
  }

  test("strings whose collation is not byte equality are Keep for probing but hashed as bytes when written") {
    assumeCollations()
    val lcase = collatedString("UTF8_LCASE")
    val v = UTF8String.fromString("Hello")
    assert(hashes(v, lcase, ColumnEncoding.String) eq Keep)
    assert(hashWritten(v, lcase, ColumnEncoding.String) == PlainHash.bytes(utf8("Hello")))
    assert(one(hashes(v, collatedString("UTF8_BINARY"), ColumnEncoding.String)) == PlainHash.bytes(utf8("Hello")))
  }

  test("binary values hash their bytes") {
    val b = Array[Byte](1, 2, 3, 0, -1)
    assert(one(hashes(b, BinaryType, ColumnEncoding.Binary)) == PlainHash.bytes(b))
  }

  test("dates hash their day number as INT32 only in a DATE column") {
    assert(one(hashes(19000, DateType, ColumnEncoding.Date)) == PlainHash.int32(19000))
    assert(hashes(19000, DateType, ColumnEncoding.Int32) eq Keep)
    assert(hashes(19000, IntegerType, ColumnEncoding.Date) eq Keep)
  }

  test("timestamps hash micros, millis when exact, or nanos, matching the column's UTC flag") {
    val micros = 1700000000123000L
    assert(one(hashes(micros, TimestampType, ColumnEncoding.timestamp("MICROS", utc = true))) ==
      PlainHash.int64(micros))
    assert(one(hashes(micros, TimestampType, ColumnEncoding.timestamp("MILLIS", utc = true))) ==
      PlainHash.int64(micros / 1000))
    assert(hashes(micros + 1, TimestampType, ColumnEncoding.timestamp("MILLIS", utc = true)) eq Keep, "sub-millisecond")
    assert(one(hashes(micros, TimestampType, ColumnEncoding.timestamp("NANOS", utc = true))) ==
      PlainHash.int64(micros * 1000))
    assert(one(hashes(micros, TimestampNTZType, ColumnEncoding.timestamp("MICROS", utc = false))) ==
      PlainHash.int64(micros))
    assert(hashes(micros, TimestampNTZType, ColumnEncoding.timestamp("MICROS", utc = true)) eq Keep)
    assert(hashes(micros, TimestampType, ColumnEncoding.timestamp("MICROS", utc = false)) eq Keep)
  }

  test("INT96 timestamps hash nanos-of-day and Julian day, also before 1970") {
    // 1970-01-01T00:00:00.000001Z: day 2440588, 1000 ns.
    assert(one(hashes(1L, TimestampType, ColumnEncoding.Int96)) ==
      PlainHash.bytes(hex("e803000000000000" + "8c3d2500")))
    // 1969-12-31T23:59:59.999999Z: day 2440587, 86399999999000 ns.
    val nanos = 86399999999000L
    val expected = PlainHash.int96(nanos, 2440587, new Array[Byte](12))
    assert(one(hashes(-1L, TimestampType, ColumnEncoding.Int96)) == expected)
  }

  test("dates and timestamps of a file written with the legacy calendar are Keep") {
    assert(hashes(19000, DateType, ColumnEncoding.Date.copy(rebase = true)) eq Keep)
    assert(hashes(1L, TimestampType, ColumnEncoding.Int96.copy(rebase = true)) eq Keep)
  }

  private def dec(s: String, p: Int, sc: Int): Decimal = Decimal(BigDecimal(s), p, sc)

  test("decimals hash their unscaled value in the column's physical form") {
    assert(one(hashes(dec("1.23", 5, 2), DecimalType(5, 2), ColumnEncoding.decimal("INT32", 5, 2))) ==
      PlainHash.int32(123))
    assert(one(hashes(dec("-1.23", 15, 2), DecimalType(15, 2), ColumnEncoding.decimal("INT64", 15, 2))) ==
      PlainHash.int64(-123))
    assert(one(hashes(dec("1.00", 10, 2), DecimalType(10, 2),
      ColumnEncoding.decimal("FIXED_LEN_BYTE_ARRAY", 10, 2, 5))) ==
      PlainHash.bytes(hex("0000000064")))
    assert(one(hashes(dec("-1.23", 10, 2), DecimalType(10, 2),
      ColumnEncoding.decimal("FIXED_LEN_BYTE_ARRAY", 10, 2, 5))) ==
      PlainHash.bytes(hex("ffffffff85")))
  }

  test("a decimal literal of another scale is rescaled when exact and Keep when not") {
    val enc = ColumnEncoding.decimal("INT64", 12, 4)
    assert(one(hashes(dec("1.5", 3, 1), DecimalType(3, 1), enc)) == PlainHash.int64(15000))
    assert(hashes(dec("1.23456", 6, 5), DecimalType(6, 5), enc) eq Keep)
  }

  test("a decimal wider than the column's precision is Keep") {
    assert(hashes(dec("123456.7", 8, 1), DecimalType(8, 1), ColumnEncoding.decimal("INT32", 5, 1)) eq Keep)
  }

  test("BYTE_ARRAY decimals are Keep: their width is not unique") {
    assert(hashes(dec("1.00", 10, 2), DecimalType(10, 2), ColumnEncoding.decimal("BYTE_ARRAY", 10, 2)) eq Keep)
  }

  test("a value of a type the encoding cannot hold is Keep") {
    assert(hashes(1.5, DoubleType, ColumnEncoding.Float) eq Keep)
    assert(hashes(UTF8String.fromString("1"), StringType, ColumnEncoding.Int32) eq Keep)
    assert(hashes(1, IntegerType, ColumnEncoding.String) eq Keep)
  }

  test("a timestamp written as millis is hashed as Spark writes it: floored to the millisecond") {
    val enc = ColumnEncoding.timestamp("MILLIS", utc = true)
    assert(hashWritten(1700000000123456L, TimestampType, enc) == PlainHash.int64(1700000000123L))
    assert(hashWritten(-1L, TimestampType, enc) == PlainHash.int64(-1L), "floor, not truncation toward zero")
  }
}
