package sparkbloom.parquet

import org.apache.parquet.schema.Type
import org.apache.parquet.schema.LogicalTypeAnnotation._
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import sparkbloom.hash.ColumnEncoding

/**
 * The [[ColumnEncoding]] of a top-level Parquet column, read from the file's own schema: the physical type
 * and the annotation that gives its bits their meaning. Anything we do not understand (repeated or nested
 * fields, BOOLEAN, unsigned ints, intervals, ...) yields None: such columns are not indexed in that file,
 * so the file is always read for predicates on them.
 */
object FileEncodings {
  /** Spark's footer keys marking values written in the legacy hybrid Julian calendar. */
  val LegacyDateTimeKey = "org.apache.spark.legacyDateTime"
  val LegacyInt96Key = "org.apache.spark.legacyINT96"
  /** Spark's footer key naming the Spark version that wrote the file. */
  val SparkVersionKey = "org.apache.spark.version"

  def of(field: Type, keyValueMetadata: java.util.Map[String, String]): Option[ColumnEncoding] = {
    if (!field.isPrimitive || field.isRepetition(Type.Repetition.REPEATED)) return None
    val p = field.asPrimitiveType()
    val meta = Option(keyValueMetadata).getOrElse(java.util.Collections.emptyMap[String, String]())
    val legacyDate = meta.containsKey(LegacyDateTimeKey)
    val legacyInt96 = meta.containsKey(LegacyInt96Key) || legacyDate
    val ann = p.getLogicalTypeAnnotation
    val physical = p.getPrimitiveTypeName
    // INT96 holds nanoseconds; Spark reads them truncated to microseconds, so many stored values read as one
    // Spark value and a probe of one of them could miss the others. Spark itself writes whole microseconds
    // (its footers carry org.apache.spark.version); from any other writer an INT96 column is never probed.
    if (physical == PrimitiveTypeName.INT96 && !meta.containsKey(SparkVersionKey)) return None
    val logical: Option[String] = (physical, ann) match {
      case (PrimitiveTypeName.BOOLEAN, _) => None
      case (_, null) => Some("")
      case (_, _: StringLogicalTypeAnnotation) => Some("STRING")
      case (_, _: EnumLogicalTypeAnnotation) => Some("ENUM")
      case (_, _: JsonLogicalTypeAnnotation) => Some("JSON")
      case (_, _: DateLogicalTypeAnnotation) => Some("DATE")
      case (_, i: IntLogicalTypeAnnotation) => Some(s"INT(${i.getBitWidth},${i.isSigned})")
      case (_, d: DecimalLogicalTypeAnnotation) => Some(s"DECIMAL(${d.getPrecision},${d.getScale})")
      case (_, t: TimestampLogicalTypeAnnotation) => Some(s"TIMESTAMP(${t.getUnit},${t.isAdjustedToUTC})")
      case (_, _: UUIDLogicalTypeAnnotation) => Some("UUID")
      case _ => None
    }
    logical.map { l =>
      val rebase = l match {
        case "DATE" => legacyDate
        case t if t.startsWith("TIMESTAMP") => legacyDate
        case _ => physical == PrimitiveTypeName.INT96 && legacyInt96
      }
      // parquet-java calls BYTE_ARRAY "BINARY"; the index uses the format's names.
      val physicalName = if (physical == PrimitiveTypeName.BINARY) "BYTE_ARRAY" else physical.name()
      ColumnEncoding(physicalName, l,
        if (physical == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY) p.getTypeLength else 0, rebase)
    }
  }
}
