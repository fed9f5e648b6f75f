package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.{SqlStatementSplitResult, TemporalIdentifier}

/**
 * Spark 4.3 adds `splitStatements` (abstract; the `spark-sql` shell splits its input with it) and
 * `parseTemporalTableIdentifier` (its default drops the time-travel clause). Both are forwarded, as are
 * 4.0's `parseRoutineParam` and 4.1's `parsePlanWithParameters`.
 */
trait ParserShims extends ParametersForwarding {
  override def splitStatements(sqlText: String): SqlStatementSplitResult = delegate.splitStatements(sqlText)

  override def parseTemporalTableIdentifier(sqlText: String): TemporalIdentifier =
    delegate.parseTemporalTableIdentifier(sqlText)
}
