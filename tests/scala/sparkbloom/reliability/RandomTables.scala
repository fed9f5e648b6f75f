package sparkbloom.reliability

import java.time.{Instant, LocalDate, LocalDateTime, ZoneOffset}

import scala.util.Random

import org.apache.spark.sql.{Column, Row}
import org.apache.spark.sql.functions.{col, lit, not}
import org.apache.spark.sql.types._

/**
 * Random rows and random predicates for the differential fuzz suite. Values are clustered by row number
 * (rows close together share values), so different files and row groups hold different values and the
 * index has something to prune; every type also gets its edge values (extremes, NaN, both zeros, empty
 * strings, multi-byte UTF-8) and nulls scattered everywhere.
 */
object RandomTables {
  val schema: StructType = StructType(Seq(
      StructField("id", LongType, nullable = false),
      StructField("c_byte", ByteType), StructField("c_short", ShortType), StructField("c_int", IntegerType),
      StructField("c_long", LongType), StructField("c_float", FloatType), StructField("c_double", DoubleType),
      StructField("c_dec5", DecimalType(5, 2)), StructField("c_dec15", DecimalType(15, 3)),
      StructField("c_dec30", DecimalType(30, 5)), StructField("c_date", DateType), StructField("c_ts", TimestampType),
      StructField("c_tsntz", TimestampNTZType), StructField("c_str", StringType), StructField("c_bin", BinaryType)))

  val indexed: Seq[StructField] = schema.fields.toSeq.tail

  private val suffixes = Array("", "é", "日本語", "😀", " ", "\u0000")
  private def bd(s: String) = new java.math.BigDecimal(s)

  /** Edge values of each type (besides null). */
  def specials(dt: DataType): Seq[Any] = dt match {
    case ByteType => Seq(Byte.MinValue, Byte.MaxValue, 0.toByte, -1.toByte)
    case ShortType => Seq(Short.MinValue, Short.MaxValue, 0.toShort, -1.toShort)
    case IntegerType => Seq(Int.MinValue, Int.MaxValue, 0, -1)
    case LongType => Seq(Long.MinValue, Long.MaxValue, 0L, -1L)
    case FloatType => Seq(Float.NaN, -0.0f, 0.0f, Float.MinValue, Float.MaxValue, Float.MinPositiveValue,
        Float.PositiveInfinity, Float.NegativeInfinity)
    case DoubleType => Seq(Double.NaN, -0.0d, 0.0d, Double.MinValue, Double.MaxValue, Double.MinPositiveValue,
        Double.PositiveInfinity, Double.NegativeInfinity)
    case d: DecimalType if d.precision == 5 => Seq(bd("999.99"), bd("-999.99"), bd("0.00"), bd("0.01"))
    case d: DecimalType if d.precision == 15 => Seq(bd("999999999999.999"), bd("-999999999999.999"), bd("0.000"))
    case d: DecimalType if d.precision == 30 =>
      Seq(bd("9999999999999999999999999.99999"), bd("-9999999999999999999999999.99999"), bd("0.00000"))
    case DateType =>
      Seq(LocalDate.of(1970, 1, 1), LocalDate.of(1969, 12, 31), LocalDate.of(2100, 2, 28), LocalDate.of(1900, 3, 1))
    case TimestampType =>
      Seq(Instant.EPOCH, Instant.parse("1969-12-31T23:59:59.999999Z"), Instant.parse("2262-04-11T00:00:00Z"))
    case TimestampNTZType => Seq(LocalDateTime.of(1970, 1, 1, 0, 0), LocalDateTime.of(1900, 1, 1, 0, 0, 0, 1000))
    case StringType => Seq("", "日本語", "😀", "ß", "a" * 300)
    case BinaryType => Seq(Array.emptyByteArray, Array[Byte](0), Array[Byte](-1, -1, -1))
  }

  /** A value derived from a clustering key: equal keys give equal values. */
  def fromKey(k: Long, dt: DataType): Any = dt match {
    case ByteType => (k % 256 - 128).toByte
    case ShortType => (k % 65536 - 32768).toShort
    case IntegerType => (k * 7919L % Int.MaxValue).toInt
    case LongType => k * 1000003L * 1000003L
    case FloatType => k * 0.5f - 1000f
    case DoubleType => k * 0.1d - 500d
    case d: DecimalType if d.precision == 5 => java.math.BigDecimal.valueOf(k % 99999 - 49999, 2)
    case d: DecimalType if d.precision == 15 => java.math.BigDecimal.valueOf(k * 1000003L + 123, 3)
    case d: DecimalType if d.precision == 30 => java.math.BigDecimal.valueOf(k).multiply(bd("1000000000000000.12345"))
    case DateType => LocalDate.ofEpochDay(k % 60000 - 20000)
    case TimestampType => Instant.ofEpochSecond(k * 3601L - 100000L, (k % 1000) * 1000L)
    case TimestampNTZType => LocalDateTime.ofEpochSecond(k * 3599L, ((k % 997) * 1000).toInt, ZoneOffset.UTC)
    case StringType => s"k$k${suffixes((k % suffixes.length).toInt)}"
    case BinaryType => BigInt(k).toByteArray
  }

  def rows(rng: Random, n: Int, firstId: Long): Seq[Row] = (0 until n).map { i =>
    val id = firstId + i
    Row.fromSeq(id +: indexed.map { f =>
      val r = rng.nextDouble()
      if (r < 0.08) null
      else if (r < 0.14) { val s = specials(f.dataType); s(rng.nextInt(s.size)) }
      else fromKey(id / 16 + rng.nextInt(3), f.dataType)
    })
  }

  /** A literal for column `f`: present in the data (from `sample`), absent, an edge value, or NULL. */
  def literal(rng: Random, f: StructField, sample: () => Row): Any = {
    val r = rng.nextDouble()
    if (r < 0.05) null
    else if (r < 0.55) { val row = sample(); row.get(RandomTables.schema.fieldIndex(f.name)) }
    else if (r < 0.7) { val s = specials(f.dataType); s(rng.nextInt(s.size)) }
    else fromKey(1000000L + rng.nextInt(1000000), f.dataType)
  }

  /** The literal as a column of the column's own type (casts of literals are folded before our rule). */
  def typed(v: Any, dt: DataType): Column = lit(v).cast(dt)

  /** The same value as a literal of another numeric type, where that is safe under ANSI mode. */
  def crossTyped(rng: Random, v: Any, dt: DataType): Column = (v, dt) match {
    case (null, _) => lit(null)
    case (b: Byte, _) => crossIntegral(rng, b.toLong)
    case (s: Short, _) => crossIntegral(rng, s.toLong)
    case (i: Int, _) => crossIntegral(rng, i.toLong)
    case (l: Long, _) =>
      rng.nextInt(3) match { case 0 => lit(BigDecimal(l).bigDecimal); case 1 => lit(l.toDouble); case _ => lit(l) }
    case (f: Float, _) => lit(f.toDouble)
    case (d: Double, _) => if (d.isNaN || d.isInfinite) lit(d) else lit(d.toFloat)
    case (d: java.math.BigDecimal, _) => if (rng.nextBoolean()) lit(d.doubleValue()) else lit(d.setScale(d.scale + 1))
    case _ => typed(v, dt)
  }

  private def crossIntegral(rng: Random, l: Long): Column = rng.nextInt(5) match {
    case 0 => lit(l)
    case 1 => lit(l.toDouble)
    case 2 => lit(l.toDouble + 0.5)
    case 3 => lit(java.math.BigDecimal.valueOf(l))
    case _ => lit(l + 1000L) // out of range for the narrow types: Spark unwraps it to false
  }

  /** A random predicate tree of the given depth over the indexed columns. */
  def predicate(rng: Random, depth: Int, sample: () => Row): Column = {
    if (depth > 0 && rng.nextDouble() < 0.45) {
      rng.nextInt(3) match {
        case 0 => predicate(rng, depth - 1, sample) && predicate(rng, depth - 1, sample)
        case 1 => predicate(rng, depth - 1, sample) || predicate(rng, depth - 1, sample)
        case _ => not(predicate(rng, depth - 1, sample))
      }
    } else {
      val f = indexed(rng.nextInt(indexed.size))
      val c = col(f.name)
      rng.nextInt(10) match {
        case 0 | 1 | 2 => c === typed(literal(rng, f, sample), f.dataType)
        case 3 => c <=> typed(literal(rng, f, sample), f.dataType)
        case 4 => c.isNull
        case 5 => c === crossTyped(rng, literal(rng, f, sample), f.dataType)
        case _ =>
          val n = if (rng.nextDouble() < 0.04) 1 + rng.nextInt(1000) else 1 + rng.nextInt(20)
          c.isin((0 until n).map(_ => typed(literal(rng, f, sample), f.dataType)): _*)
      }
    }
  }
}
