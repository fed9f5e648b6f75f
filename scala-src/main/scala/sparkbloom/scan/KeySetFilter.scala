package sparkbloom.scan

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.types.{BooleanType, DataType}

/**
 * The run-time filter key-set pruning plants over a scan: Spark's own (`DynamicPruningSubquery`, planned by
 * Spark into `DynamicPruningExpression(InSubqueryExec)`), marked deterministic. As a row filter it is exactly
 * its child (`key IN keys`, implied by the join it comes from). The mark matters only to Spark's
 * `CleanupDynamicPruningFilters`, which drops run-time filters whose subquery plan is not deterministic (a Delta
 * MERGE source is, on purpose): the keys are read from the join's own broadcast only in that case, never
 * computed twice, so the scan's files do not depend on a second evaluation.
 */
case class KeySetFilter(child: Expression) extends UnaryExpression {
  override def dataType: DataType = BooleanType
  override def nullable: Boolean = child.nullable
  override lazy val deterministic: Boolean = true
  override def eval(input: InternalRow): Any = child.eval(input)
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val c = child.genCode(ctx)
    ev.copy(code = c.code, isNull = c.isNull, value = c.value)
  }
  override def sql: String = child.sql
  override def toString: String = s"bloom_keyset($child)"
  override protected def withNewChildInternal(newChild: Expression): KeySetFilter = copy(child = newChild)
}
