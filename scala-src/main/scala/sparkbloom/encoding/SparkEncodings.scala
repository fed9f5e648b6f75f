package sparkbloom.encoding

import org.apache.spark.sql.types._

import sparkbloom.hash.{ColumnEncoding, PlainHash}

/**
 * Spark types on one side, Parquet physical encodings on the other.
 *
 * [[writtenBy]] says how Spark's own writer encodes a Spark type (used by `sbbf_hash` and as a default);
 * the index never relies on it for pruning: it records each file's actual encoding from the file's
 * footer (see `sparkbloom.parquet.FileEncodings`) and hashes with that.
 *
 * Timestamps: Spark writes TimestampType as INT96 by default (`spark.sql.parquet.outputTimestampType`),
 * as INT64 MICROS or MILLIS when configured; TimestampNTZ always as INT64 MICROS. INT96 values are hashed
 * as their 12 PLAIN bytes (nanos-of-day, Julian day; what Arrow C++ does), and only for files written with
 * the proleptic Gregorian calendar: a file marked as legacy-rebased is never pruned on.
 */
object SparkEncodings {

  def writtenBy(dt: DataType, outputTimestampType: String = "INT96", legacyDecimal: Boolean = false)
      : Option[ColumnEncoding] =
    dt match {
      case ByteType => Some(ColumnEncoding("INT32", "INT(8,true)", 0))
      case ShortType => Some(ColumnEncoding("INT32", "INT(16,true)", 0))
      case IntegerType => Some(ColumnEncoding.Int32)
      case DateType => Some(ColumnEncoding.Date)
      case LongType => Some(ColumnEncoding.Int64)
      case FloatType => Some(ColumnEncoding.Float)
      case DoubleType => Some(ColumnEncoding.Double)
      case _: StringType => Some(ColumnEncoding.String) // any collation: Spark writes the bytes
      case BinaryType => Some(ColumnEncoding.Binary)
      case TimestampNTZType => Some(ColumnEncoding.timestamp("MICROS", utc = false))
      case TimestampType => outputTimestampType.toUpperCase match {
          case "TIMESTAMP_MICROS" => Some(ColumnEncoding.timestamp("MICROS", utc = true))
          case "TIMESTAMP_MILLIS" => Some(ColumnEncoding.timestamp("MILLIS", utc = true))
          case _ => Some(ColumnEncoding.Int96)
        }
      case d: DecimalType =>
        if (!legacyDecimal && d.precision <= Decimal.MAX_INT_DIGITS)
          Some(ColumnEncoding.decimal("INT32", d.precision, d.scale))
        else if (!legacyDecimal && d.precision <= Decimal.MAX_LONG_DIGITS)
          Some(ColumnEncoding.decimal("INT64", d.precision, d.scale))
        else Some(ColumnEncoding.decimal("FIXED_LEN_BYTE_ARRAY", d.precision, d.scale,
          PlainHash.minBytesForPrecision(d.precision)))
      case _ => None // BOOLEAN, nested types, intervals, variants: not indexable
    }

  /** Spark types a bloom index can be built on. */
  def indexable(dt: DataType): Boolean = dt match {
    case BooleanType => false
    case st: StringType => st == StringType // other collations do not compare byte for byte
    case _ => writtenBy(dt).isDefined
  }

  def unsupportedReason(dt: DataType): String = dt match {
    case BooleanType => "BOOLEAN columns cannot carry a Parquet bloom filter (the format defines none for them)"
    case st: StringType => s"${st.catalogString} compares strings other than byte for byte, so a bloom filter of " +
        "the stored bytes could answer wrongly; only the default UTF8_BINARY collation is supported"
    case other =>
      s"type ${other.catalogString} is not supported by bloom filters (supported: tinyint, smallint, int, " +
        "bigint, float, double, decimal, date, timestamp, timestamp_ntz, string, binary)"
  }
}
