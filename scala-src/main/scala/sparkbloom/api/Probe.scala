package sparkbloom.api

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.parquet.schema.{LogicalTypeAnnotation, PrimitiveType}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName._

import sparkbloom.hash.PlainHash

/**
 * An inspector probe `column=value`: the value is text, written into the bytes a Parquet writer would
 * have hashed for a column chunk of the given physical type.
 *
 * | physical type        | the text is read as                                          |
 * |----------------------|--------------------------------------------------------------|
 * | INT32                | an integer, or a date (`2024-01-31`) when the column is DATE |
 * | INT64                | an integer                                                   |
 * | FLOAT / DOUBLE       | a decimal number (0 probes both 0.0 and -0.0)                |
 * | BYTE_ARRAY           | its UTF-8 bytes, exactly (spaces included)                   |
 * | FIXED_LEN_BYTE_ARRAY | hex when prefixed `0x`, else UTF-8; must have the fixed width |
 */
final case class Probe(column: String, value: String) {
  /** The hashes any of which a filter must hold for the value to be present, or why there are none. */
  def hashes(t: PrimitiveType): Either[String, Seq[Long]] = t.getPrimitiveTypeName match {
    case INT32 => scala.util.Try(value.trim.toInt).toOption match {
        case Some(v) => Right(Seq(PlainHash.int32(v)))
        case None if t.getLogicalTypeAnnotation.isInstanceOf[LogicalTypeAnnotation.DateLogicalTypeAnnotation] =>
          try Right(Seq(PlainHash.int32(java.time.LocalDate.parse(value.trim).toEpochDay.toInt)))
          catch {
            case _: java.time.format.DateTimeParseException => Left(s"'$value' is not a date (yyyy-mm-dd) or an INT32")
          }
        case None => Left(s"'$value' is not an INT32")
      }
    case INT64 =>
      scala.util.Try(value.trim.toLong).toOption.map(v => Seq(PlainHash.int64(v))).toRight(s"'$value' is not an INT64")
    case FLOAT => scala.util.Try(value.trim.toFloat).toOption match {
        case Some(f) if f.isNaN => Left("NaN cannot be probed: writers hash NaNs of several bit patterns")
        case Some(f) if f == 0.0f => Right(Seq(PlainHash.float(0.0f), PlainHash.float(-0.0f)))
        case Some(f) => Right(Seq(PlainHash.float(f)))
        case None => Left(s"'$value' is not a FLOAT")
      }
    case DOUBLE => scala.util.Try(value.trim.toDouble).toOption match {
        case Some(d) if d.isNaN => Left("NaN cannot be probed: writers hash NaNs of several bit patterns")
        case Some(d) if d == 0.0 => Right(Seq(PlainHash.double(0.0), PlainHash.double(-0.0)))
        case Some(d) => Right(Seq(PlainHash.double(d)))
        case None => Left(s"'$value' is not a DOUBLE")
      }
    case BINARY => Right(Seq(PlainHash.bytes(value.getBytes(UTF_8))))
    case FIXED_LEN_BYTE_ARRAY =>
      bytesOf(value).flatMap { b =>
        if (b.length == t.getTypeLength) Right(Seq(PlainHash.bytes(b)))
        else Left(s"the value is ${b.length} bytes, the column FIXED_LEN_BYTE_ARRAY(${t.getTypeLength})")
      }
    case other => Left(s"$other values cannot be probed")
  }

  private def bytesOf(v: String): Either[String, Array[Byte]] =
    if (v.startsWith("0x") || v.startsWith("0X")) {
      val hex = v.substring(2)
      if (hex.length % 2 != 0 || !hex.forall(c => Character.digit(c, 16) >= 0)) Left(s"'$v' is not hex")
      else Right(hex.grouped(2).map(h => Integer.parseInt(h, 16).toByte).toArray)
    } else Right(v.getBytes(UTF_8))
}

object Probe {
  /** `column=value`, split at the first '='; the value is kept exactly (a trailing space matters). */
  def parse(text: String): Probe = {
    val i = text.indexOf('=')
    if (i <= 0 || text.substring(0, i).trim.isEmpty)
      throw new IllegalArgumentException(s"probe '$text' is not column=value")
    Probe(text.substring(0, i).trim, text.substring(i + 1))
  }
}
