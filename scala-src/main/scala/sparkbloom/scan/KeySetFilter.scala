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
  /**
   * Row by row (no generated code), the run-time filter reads its keys from the broadcast its subquery makes
   * ([[RuntimeKeys]] asks for one). Should it have none in some plan, Spark's `InSubqueryExec` fails every row
   * ("... has not finished"): the row is kept instead (the join it comes from drops it), so sparkbloom never fails
   * the query. A transient flag: one failed probe per task, not one per row.
   */
  @transient private var keysMissing = false
  override def eval(input: InternalRow): Any =
    if (keysMissing) true
    else try child.eval(input)
    catch {
      case e: IllegalArgumentException if String.valueOf(e.getMessage).endsWith("has not finished") =>
        keysMissing = true
        true
    }
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val c = child.genCode(ctx)
    ev.copy(code = c.code, isNull = c.isNull, value = c.value)
  }
  override def sql: String = child.sql
  override def toString: String = s"bloom_keyset($child)"
  override protected def withNewChildInternal(newChild: Expression): KeySetFilter = copy(child = newChild)
}
