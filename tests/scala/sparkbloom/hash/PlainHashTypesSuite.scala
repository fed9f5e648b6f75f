package sparkbloom.hash

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.TestSupport.{hex, u64, utf8}

/** vectors.md §2d: the plain encoding of each physical type, and its xxHash64. */
class PlainHashTypesSuite extends AnyFunSuite {

  test("INT32 values hash their 4 little-endian bytes") {
    val rows = Seq(0 -> "3aefa6fd5cf2deb4", 1 -> "f42f94001fcb5351", -1 -> "7f78e4bda3addf93", 42 -> "d756d7b62fc50bf1",
      Int.MaxValue -> "293bb5f36edfe474", Int.MinValue -> "822e51211bf08373")
    for ((v, h) <- rows) assert(PlainHash.int32(v) == u64(h), s"INT32 $v")
    assert(PlainHash.int32(42) == PlainHash.bytes(hex("2a000000")))
  }

  test("INT64 values hash their 8 little-endian bytes") {
    val rows = Seq(0L -> "34c96acdcadb1bbb", 1L -> "9f29cb17a2a49995", -1L -> "85d136adb773c6c9",
      42L -> "b556806fb6d14353",
      Long.MaxValue -> "ff70cc60366e770c", Long.MinValue -> "3f425eacf01544e0")
    for ((v, h) <- rows) assert(PlainHash.int64(v) == u64(h), s"INT64 $v")
    assert(PlainHash.int64(42L) == PlainHash.bytes(hex("2a00000000000000")))
  }

  test("FLOAT values hash their raw IEEE bits, so the two zeros differ and NaN has a hash") {
    val rows = Seq(0.0f -> "3aefa6fd5cf2deb4", -0.0f -> "822e51211bf08373", 1.0f -> "7b54265d12bf1ccd",
      1.5f -> "4f2d82595c483a0d", java.lang.Float.intBitsToFloat(0x7fc00000) -> "d65166e46df1863e")
    for ((v, h) <- rows) assert(PlainHash.float(v) == u64(h), s"FLOAT $v")
    assert(PlainHash.float(0.0f) != PlainHash.float(-0.0f))
  }

  test("DOUBLE values hash their raw IEEE bits") {
    val rows = Seq(0.0 -> "34c96acdcadb1bbb", -0.0 -> "3f425eacf01544e0", 1.0 -> "949522f153a1a395",
      java.lang.Double.longBitsToDouble(0x7ff8000000000000L) -> "e9adb09fee122aac")
    for ((v, h) <- rows) assert(PlainHash.double(v) == u64(h), s"DOUBLE $v")
  }

  test("BYTE_ARRAY values hash their bytes without PLAIN's length prefix") {
    val rows = Seq("" -> "ef46db3751d8e999", "a" -> "d24ec4f1a98c6e5b", "Hello" -> "0a75a91375b27d44",
      "hello" -> "26c7827d889f6da3", "parquet" -> "3c9d29275c52e429")
    for ((v, h) <- rows) assert(PlainHash.bytes(utf8(v)) == u64(h), s"BYTE_ARRAY '$v'")
    val withPrefix = Array[Byte](5, 0, 0, 0) ++ utf8("hello")
    assert(PlainHash.bytes(withPrefix) != u64("26c7827d889f6da3"))
  }

  test("an INT32 column must be probed with 4 bytes: the 8-byte encoding of the same number differs") {
    assert(PlainHash.int32(1) == u64("f42f94001fcb5351"))
    assert(PlainHash.int64(1L) == u64("9f29cb17a2a49995"))
    assert(PlainHash.int32(0) == PlainHash.float(0.0f), "INT32 0 and FLOAT +0.0 have the same bytes")
  }

  test("FIXED_LEN_BYTE_ARRAY decimals are sign-extended big-endian two's complement (pyarrow's DECIMAL(10,2))") {
    val scratch = new Array[Byte](16)
    assert(PlainHash.fixedDecimal(100L, 5, scratch) == PlainHash.bytes(hex("0000000064")), "1.00")
    assert(PlainHash.fixedDecimal(-123L, 5, scratch) == PlainHash.bytes(hex("ffffffff85")), "-1.23")
    assert(PlainHash.fixedDecimal(java.math.BigInteger.valueOf(100), 5).contains(PlainHash.bytes(hex("0000000064"))))
    assert(PlainHash.fixedDecimal(java.math.BigInteger.valueOf(-123), 5).contains(PlainHash.bytes(hex("ffffffff85"))))
  }

  test("a decimal too wide for its fixed length has no encoding") {
    assert(PlainHash.fixedDecimal(java.math.BigInteger.ONE.shiftLeft(40), 5).isEmpty)
    assert(PlainHash.fixedDecimal(java.math.BigInteger.ONE.shiftLeft(38), 5).isDefined)
  }

  test("the long and BigInteger decimal paths agree for every width Spark uses") {
    val rnd = new scala.util.Random(7)
    for (len <- 1 to 8; _ <- 0 until 50) {
      val bits = 8 * len - 1
      val v = if (bits >= 63) rnd.nextLong() else rnd.nextLong() % (1L << bits)
      assert(PlainHash.fixedDecimal(v, len, new Array[Byte](len)) ==
          PlainHash.fixedDecimal(java.math.BigInteger.valueOf(v), len).get, s"$v in $len bytes")
    }
  }

  test("INT96 hashes nanos-of-day then the Julian day, both little-endian (Arrow C++'s 12 bytes)") {
    // 1970-01-02T00:00:01 = Julian day 2440589, 1 s into the day.
    val expected = hex("00ca9a3b00000000" + "8d3d2500")
    assert(PlainHash.int96(1000000000L, 2440589, new Array[Byte](12)) == PlainHash.bytes(expected))
  }

  test("minBytesForPrecision matches Spark's table for the FIXED_LEN_BYTE_ARRAY widths") {
    val spark = (1 to 38).map(p => org.apache.spark.sql.types.Decimal.minBytesForPrecision(p))
    assert((1 to 38).map(PlainHash.minBytesForPrecision) == spark)
    assert(PlainHash.minBytesForPrecision(38) == 16)
  }
}
