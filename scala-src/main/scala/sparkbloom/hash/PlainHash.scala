package sparkbloom.hash

import java.nio.ByteOrder

import net.openhft.hashing.LongHashFunction

/**
 * xxHash64 (seed 0) of a value's Parquet PLAIN encoding, without allocating per value:
 *
 * | physical type        | bytes hashed                                   |
 * |----------------------|------------------------------------------------|
 * | INT32 / INT64        | 4 / 8 bytes little-endian                      |
 * | FLOAT / DOUBLE       | the raw IEEE 754 bits, little-endian           |
 * | BYTE_ARRAY           | the bytes, *without* PLAIN's 4-byte length     |
 * | FIXED_LEN_BYTE_ARRAY | the fixed bytes                                |
 * | INT96                | 12 bytes: nanos-of-day (LE i64), Julian day (LE i32), as Arrow C++ |
 * | BOOLEAN              | unsupported (no writer builds filters for it)  |
 */
object PlainHash {
  private[this] val xx: LongHashFunction = LongHashFunction.xx(0L)
  // zero-allocation-hashing reads primitives in native order; PLAIN is little-endian.
  private[this] val littleEndian: Boolean = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN

  def int32(v: Int): Long = xx.hashInt(if (littleEndian) v else Integer.reverseBytes(v))
  def int64(v: Long): Long = xx.hashLong(if (littleEndian) v else java.lang.Long.reverseBytes(v))
  def float(v: Float): Long = int32(java.lang.Float.floatToRawIntBits(v))
  def double(v: Double): Long = int64(java.lang.Double.doubleToRawLongBits(v))
  def bytes(b: Array[Byte]): Long = xx.hashBytes(b)
  def bytes(b: Array[Byte], off: Int, len: Int): Long = xx.hashBytes(b, off, len)
  def bytes(b: java.nio.ByteBuffer): Long = xx.hashBytes(b)
  /** `len` bytes of `b` from absolute index `off` (position and limit ignored). */
  def bytes(b: java.nio.ByteBuffer, off: Int, len: Int): Long = xx.hashBytes(b, off, len)

  /** INT96 timestamp: 8 bytes of nanoseconds in the day then 4 bytes of Julian day, both little-endian. */
  def int96(nanosOfDay: Long, julianDay: Int, scratch: Array[Byte]): Long = {
    var i = 0
    while (i < 8) { scratch(i) = (nanosOfDay >>> (8 * i)).toByte; i += 1 }
    while (i < 12) { scratch(i) = (julianDay >>> (8 * (i - 8))).toByte; i += 1 }
    xx.hashBytes(scratch, 0, 12)
  }

  /**
   * FIXED_LEN_BYTE_ARRAY decimal: the unscaled value as `len` bytes of big-endian two's complement,
   * sign-extended (how Spark and parquet-java write decimals that do not fit INT32/INT64).
   * Returns None when the value does not fit in `len` bytes.
   */
  def fixedDecimal(unscaled: Long, len: Int, scratch: Array[Byte]): Long = {
    var i = len - 1; var v = unscaled
    while (i >= 0) { scratch(i) = v.toByte; v >>= 8; i -= 1 }
    xx.hashBytes(scratch, 0, len)
  }

  def fixedDecimal(unscaled: java.math.BigInteger, len: Int): Option[Long] = {
    val raw = unscaled.toByteArray // minimal big-endian two's complement
    if (raw.length > len) None
    else {
      val out = new Array[Byte](len)
      val pad: Byte = if (unscaled.signum < 0) -1 else 0
      java.util.Arrays.fill(out, 0, len - raw.length, pad)
      System.arraycopy(raw, 0, out, len - raw.length, raw.length)
      Some(xx.hashBytes(out))
    }
  }

  /** Bytes needed for a decimal of `precision` digits, as Spark's `Decimal.minBytesForPrecision`. */
  def minBytesForPrecision(precision: Int): Int = {
    var n = 1
    while (math.pow(2.0, 8 * n - 1) < math.pow(10.0, precision)) n += 1
    n
  }
}
