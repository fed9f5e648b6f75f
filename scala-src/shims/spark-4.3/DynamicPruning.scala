package sparkbloom.shims

import org.apache.spark.sql.catalyst.expressions.{DynamicPruningSubquery, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/** Spark's run-time filter expression (Spark 4.3: a second parameter list, left to its default). */
object DynamicPruning {
  def subquery(pruningKey: Expression, buildQuery: LogicalPlan, buildKeys: Seq[Expression],
               keyIndex: Int, onlyInBroadcast: Boolean): DynamicPruningSubquery =
    DynamicPruningSubquery(pruningKey, buildQuery, buildKeys.toList, List(keyIndex), onlyInBroadcast)()
}
