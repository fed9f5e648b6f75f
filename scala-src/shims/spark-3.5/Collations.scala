package sparkbloom.shims

import org.apache.spark.sql.types.StringType

/** Spark 3.5 has no collations: every string compares byte for byte. */
object Collations {
  def binaryEquality(st: StringType): Boolean = true
}
