package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.StructType

/**
 * Spark 4.1 adds `parsePlanWithParameters`, which `spark.sql(text, args)` calls. Its default body calls
 * `parsePlan(text)` and drops the bound parameters, so it is forwarded (a bloom-index statement has no
 * parameter markers and is parsed by `parsePlan`).
 */
trait ParserShims extends ParserInterface {
  protected def delegate: ParserInterface

  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)

  override def parsePlanWithParameters(sqlText: String, context: ParameterContext): LogicalPlan =
    if (sparkbloom.sql.BloomSqlParser.claims(sqlText)) parsePlan(sqlText)
    else delegate.parsePlanWithParameters(sqlText, context)
}
