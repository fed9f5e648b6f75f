package sparkbloom.shims

import org.apache.spark.sql.catalyst.expressions.{DynamicPruningSubquery, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.InSubqueryExec

/** Spark's run-time filter expression (Spark 4.3: a second parameter list, left to its default). */
object DynamicPruning {
  def subquery(pruningKey: Expression, buildQuery: LogicalPlan, buildKeys: Seq[Expression],
               keyIndex: Int, onlyInBroadcast: Boolean): DynamicPruningSubquery =
    DynamicPruningSubquery(pruningKey, buildQuery, buildKeys.toList, List(keyIndex), onlyInBroadcast)()

  /**
   * `s` made to broadcast its keys when its result is set, so executors evaluating it row by row read them; None if
   * it already does (Spark 4 broadcasts unless `isDynamicPruning`).
   */
  def broadcastingKeys(s: InSubqueryExec): Option[InSubqueryExec] =
    if (!s.isDynamicPruning) None else Some(s.copy(isDynamicPruning = false))
}
