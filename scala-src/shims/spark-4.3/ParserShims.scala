package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface, SqlStatementSplitResult, TemporalIdentifier}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.StructType

/**
 * Spark 4.3 adds `splitStatements` (abstract; the `spark-sql` shell splits its input with it) and
 * `parseTemporalTableIdentifier` (its default drops the time-travel clause). Both are forwarded, as are
 * 4.0's `parseRoutineParam` and 4.1's `parsePlanWithParameters`.
 */
trait ParserShims extends ParserInterface {
  protected def delegate: ParserInterface

  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)

  override def parsePlanWithParameters(sqlText: String, context: ParameterContext): LogicalPlan =
    if (sparkbloom.sql.BloomSqlParser.claims(sqlText)) parsePlan(sqlText)
    else delegate.parsePlanWithParameters(sqlText, context)

  override def splitStatements(sqlText: String): SqlStatementSplitResult = delegate.splitStatements(sqlText)

  override def parseTemporalTableIdentifier(sqlText: String): TemporalIdentifier =
    delegate.parseTemporalTableIdentifier(sqlText)
}
