package sparkbloom.shims

import org.apache.spark.sql.catalyst.util.CollationFactory
import org.apache.spark.sql.types.StringType

/** Spark 4.0 and later: a string column may carry a collation; only byte-equal ones can be probed. */
object Collations {
  def binaryEquality(st: StringType): Boolean = CollationFactory.fetchCollation(st.collationId).supportsBinaryEquality
}
