package sparkbloom.encoding

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import sparkbloom.hash.{ColumnEncoding, PlainHash}
import sparkbloom.shims.Collations

/**
 * Turns a Spark value (Catalyst's internal representation) of a given Spark type into the hashes a filter
 * built over a column chunk of the given encoding would hold if the value were in it.
 *
 * The answer is one of:
 *  - [[ValueHasher.Keep]]: unsure (unknown encoding, NaN, a value the encoding cannot hold exactly,
 *    legacy calendar, a string collation whose equality is not byte equality, a BYTE_ARRAY decimal whose
 *    width is not unique): the caller must not prune;
 *  - hashes: the value is present only if one of these is in the filter (two for floating zero, whose
 *    -0.0 and 0.0 are equal in Spark but hash differently).
 *
 * Probes use [[ValueHasher.hashes]]; building a filter from column values uses [[ValueHasher.hashWritten]]
 * (the one hash the writer stored, NaN included). Both go through [[ValueHasher.hashOne]] for every value
 * that is not special, so a built filter and a probe can never disagree.
 */
object ValueHasher {
  val Keep: Array[Long] = null
  private[this] final val MicrosPerDay = 86400L * 1000000L
  private[this] final val JulianDayOfEpoch = 2440588

  def hashes(value: Any, dt: DataType, enc: ColumnEncoding): Array[Long] = {
    if (value == null || enc == null) return Keep
    val h = hashOne(value, dt, enc)
    if (h == null) Keep
    else if (isFloatZero(value)) {
      val other = value match {
        case f: Float => hashOne(if (java.lang.Float.floatToRawIntBits(f) == 0) -0.0f else 0.0f, dt, enc)
        case d: Double => hashOne(if (java.lang.Double.doubleToRawLongBits(d) == 0L) -0.0d else 0.0d, dt, enc)
      }
      if (other == null) Keep else Array(h.longValue(), other.longValue())
    } else Array(h.longValue())
  }

  private def isFloatZero(v: Any): Boolean = v match {
    case f: Float => f == 0.0f
    case d: Double => d == 0.0d
    case _ => false
  }

  /** One hash, or null when the value cannot be hashed exactly for this encoding. */
  def hashOne(value: Any, dt: DataType, enc: ColumnEncoding): java.lang.Long = {
    if (enc.rebase && (dt == DateType || dt == TimestampType || dt == TimestampNTZType)) return null
    (enc.physical, dt) match {
      case ("INT32", ByteType | ShortType | IntegerType | LongType | DateType) if int32Ok(enc, dt) =>
        val l = integral(value)
        if (l >= Int.MinValue && l <= Int.MaxValue) PlainHash.int32(l.toInt) else null
      case ("INT64", ByteType | ShortType | IntegerType | LongType)
          if enc.logical.isEmpty || enc.logical == "INT(64,true)" =>
        PlainHash.int64(integral(value))
      case ("INT64", TimestampType | TimestampNTZType) => timestamp(value.asInstanceOf[Long], dt, enc)
      case ("INT96", TimestampType) =>
        val micros = value.asInstanceOf[Long]
        val day = Math.floorDiv(micros, MicrosPerDay) + JulianDayOfEpoch
        val nanos = Math.floorMod(micros, MicrosPerDay) * 1000L
        if (day < Int.MinValue || day > Int.MaxValue) null else PlainHash.int96(nanos, day.toInt, new Array[Byte](12))
      case ("FLOAT", FloatType) =>
        val f = value.asInstanceOf[Float]; if (f.isNaN) null else PlainHash.float(f)
      case ("DOUBLE", DoubleType) =>
        val d = value.asInstanceOf[Double]; if (d.isNaN) null else PlainHash.double(d)
      case ("DOUBLE", FloatType) => // a float column widened to double in a later file: exact
        val f = value.asInstanceOf[Float]; if (f.isNaN) null else PlainHash.double(f.toDouble)
      // Only UTF8_BINARY without constraints (StringType equality includes the collation): under UTF8_LCASE,
      // RTRIM or ICU collations `=` is not byte equality ('A' = 'a'), so a hash probe could answer wrongly.
      case ("BYTE_ARRAY", st: StringType) if stringLogical(enc) && st == StringType && binaryEquality(st) =>
        utf8(value.asInstanceOf[UTF8String])
      case ("BYTE_ARRAY", BinaryType) if enc.logical == "" || enc.logical == "STRING" =>
        PlainHash.bytes(value.asInstanceOf[Array[Byte]])
      case (phys, d: DecimalType) => decimal(value.asInstanceOf[Decimal], phys, enc)
      case _ => null
    }
  }

  /**
   * The hash a writer stored for `value` in a column chunk of `enc`: unlike [[hashOne]], NaN is hashed as its
   * bits and a string of any collation as its bytes, because that is what parquet-java inserts. For building
   * filters (sbbf_agg, an index built by scanning), never for probing. Null when the value has no exact
   * encoding in `enc`.
   */
  def hashWritten(value: Any, dt: DataType, enc: ColumnEncoding): java.lang.Long = {
    if (value == null || enc == null) return null
    (enc.physical, dt) match {
      case ("FLOAT", FloatType) => PlainHash.float(value.asInstanceOf[Float])
      case ("DOUBLE", DoubleType) => PlainHash.double(value.asInstanceOf[Double])
      case ("BYTE_ARRAY", _: StringType) if stringLogical(enc) => utf8(value.asInstanceOf[UTF8String])
      // Spark's writer truncates to whole milliseconds (floor), so that is what the filter holds.
      case ("INT64", TimestampType | TimestampNTZType) if enc.logical.startsWith("TIMESTAMP(MILLIS,") && !enc.rebase =>
        timestamp(Math.floorDiv(value.asInstanceOf[Long], 1000L) * 1000L, dt, enc)
      case _ => hashOne(value, dt, enc)
    }
  }

  private def binaryEquality(st: StringType): Boolean = Collations.binaryEquality(st)

  private def stringLogical(enc: ColumnEncoding): Boolean =
    enc.logical == "STRING" || enc.logical == "" || enc.logical == "ENUM" || enc.logical == "JSON"

  private def utf8(s: UTF8String): Long = s.getBaseObject match {
    case arr: Array[Byte] =>
      PlainHash.bytes(arr, (s.getBaseOffset - org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET).toInt, s.numBytes())
    case _ => PlainHash.bytes(s.getBytes)
  }

  private def int32Ok(enc: ColumnEncoding, dt: DataType): Boolean = (enc.logical, dt) match {
    case ("DATE", DateType) => true
    case (_, DateType) => false
    case ("DATE", _) => false
    // Spark reads an INT32 column as BYTE / SHORT by narrowing each value (300 reads as 44): exact only when the
    // column is annotated that narrow.
    case ("INT(8,true)", ByteType) => true
    case (_, ByteType) => false
    case ("INT(8,true)" | "INT(16,true)", ShortType) => true
    case (_, ShortType) => false
    case ("" | "INT(8,true)" | "INT(16,true)" | "INT(32,true)", _) => true
    case _ => false
  }

  private def integral(v: Any): Long = v match {
    case b: Byte => b.toLong
    case s: Short => s.toLong
    case i: Int => i.toLong
    case l: Long => l
  }

  private def timestamp(micros: Long, dt: DataType, enc: ColumnEncoding): java.lang.Long = enc match {
    case ColumnEncoding.Timestamp(unit, utc) if utc == (dt == TimestampType) =>
      unit match {
        case "MICROS" => PlainHash.int64(micros)
        case "MILLIS" => if (micros % 1000L == 0) PlainHash.int64(micros / 1000L) else null
        case "NANOS" => if (math.abs(micros) < Long.MaxValue / 1000L) PlainHash.int64(micros * 1000L) else null
        case _ => null
      }
    case _ => null
  }

  private def decimal(d: Decimal, phys: String, enc: ColumnEncoding): java.lang.Long = enc match {
    case ColumnEncoding.Decimal(precision, scale) =>
      val bd = d.toJavaBigDecimal
      val rescaled = try bd.setScale(scale)
      catch { case _: ArithmeticException => return null } // not exact
      if (rescaled.precision() > precision && rescaled.signum() != 0) return null
      val unscaled = rescaled.unscaledValue()
      phys match {
        case "INT32" => if (unscaled.bitLength() < 32) PlainHash.int32(unscaled.intValue()) else null
        case "INT64" => if (unscaled.bitLength() < 64) PlainHash.int64(unscaled.longValue()) else null
        case "FIXED_LEN_BYTE_ARRAY" =>
          PlainHash.fixedDecimal(unscaled, enc.typeLength).map(java.lang.Long.valueOf).orNull
        // BYTE_ARRAY decimals may be written with any sign-extended width (the format does not require the
        // minimal one), so a literal's bytes are not unique: unsure.
        case "BYTE_ARRAY" => null
        case _ => null
      }
    case _ => null
  }
}
