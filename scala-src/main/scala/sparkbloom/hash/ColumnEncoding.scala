package sparkbloom.hash

/**
 * How the values of one column chunk were encoded and therefore hashed: the file's physical type for the
 * column plus what is needed to turn a query literal into the same bytes. Stored in the index next to
 * every filter; a literal is only ever probed against a filter whose encoding it can be written in.
 *
 * `physical`: INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY, INT96.
 * `logical`: the annotation that changes the meaning of the bits, in a small stable vocabulary:
 *   "" (none), STRING, DATE, INT(8|16|32|64, signed), DECIMAL(p,s), TIMESTAMP(MILLIS|MICROS|NANOS, utc),
 *   UUID, ENUM, JSON ... Unknown annotations make the encoding unusable for pruning.
 * `typeLength`: the width of a FIXED_LEN_BYTE_ARRAY, else 0.
 * `rebase`: true when the file was written with Spark's legacy (Julian) calendar for dates/timestamps;
 *   such values are never pruned on.
 */
final case class ColumnEncoding(physical: String, logical: String, typeLength: Int, rebase: Boolean = false) {
  override def toString: String =
    physical + (if (typeLength > 0) s"($typeLength)" else "") + (if (logical.nonEmpty) s" $logical" else "") +
      (if (rebase) " legacy-calendar" else "")
}

object ColumnEncoding {
  val Int32 = ColumnEncoding("INT32", "", 0)
  val Int64 = ColumnEncoding("INT64", "", 0)
  val Float = ColumnEncoding("FLOAT", "", 0)
  val Double = ColumnEncoding("DOUBLE", "", 0)
  val Binary = ColumnEncoding("BYTE_ARRAY", "", 0)
  val String = ColumnEncoding("BYTE_ARRAY", "STRING", 0)
  val Date = ColumnEncoding("INT32", "DATE", 0)
  val Int96 = ColumnEncoding("INT96", "", 0)
  def timestamp(unit: String, utc: Boolean): ColumnEncoding = ColumnEncoding("INT64", s"TIMESTAMP($unit,$utc)", 0)
  def decimal(physical: String, precision: Int, scale: Int, typeLength: Int = 0): ColumnEncoding =
    ColumnEncoding(physical, s"DECIMAL($precision,$scale)", typeLength)

  private val DecimalRe = """DECIMAL\((\d+),(\d+)\)""".r
  private val TimestampRe = """TIMESTAMP\((MILLIS|MICROS|NANOS),(true|false)\)""".r
  private val IntRe = """INT\((8|16|32|64),(true|false)\)""".r

  object Decimal {
    def unapply(e: ColumnEncoding): Option[(Int, Int)] = e.logical match {
      case DecimalRe(p, s) => Some((p.toInt, s.toInt)); case _ => None
    }
  }
  object Timestamp {
    def unapply(e: ColumnEncoding): Option[(String, Boolean)] = e.logical match {
      case TimestampRe(u, utc) => Some((u, utc.toBoolean)); case _ => None
    }
  }
  object IntAnnotation {
    def unapply(e: ColumnEncoding): Option[(Int, Boolean)] = e.logical match {
      case IntRe(bits, signed) => Some((bits.toInt, signed.toBoolean)); case _ => None
    }
  }
}
