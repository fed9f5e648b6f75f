package sparkbloom.shims

import org.apache.spark.sql.catalyst.parser.ParameterContext
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Spark 4.1 added `parsePlanWithParameters`, which `spark.sql(text, args)` calls. Its default body calls
 * `parsePlan(text)` and drops the bound parameters, so it is forwarded (a bloom-index statement has no
 * parameter markers and is parsed by `parsePlan`).
 */
trait ParametersForwarding extends RoutineParamForwarding {
  /** Whether `sqlText` is a statement of the parser's own (parsed by `parsePlan`, not forwarded). */
  protected def claims(sqlText: String): Boolean

  override def parsePlanWithParameters(sqlText: String, context: ParameterContext): LogicalPlan =
    if (claims(sqlText)) parsePlan(sqlText)
    else delegate.parsePlanWithParameters(sqlText, context)
}
