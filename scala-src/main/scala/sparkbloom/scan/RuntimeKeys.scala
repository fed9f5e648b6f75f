package sparkbloom.scan

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, Coalesce, DynamicPruningExpression, ExprId, Expression, Literal
}
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec, InSubqueryExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec

import sparkbloom.index.{KeySource, RuntimeKeyed, TableFormat}

/**
 * The physical half of key-set pruning. Spark plans the run-time filter the optimizer planted
 * ([[sparkbloom.optimizer.KeySetPruningRule]]) into a `FilterExec` over the scan holding
 * `DynamicPruningExpression(InSubqueryExec(key, subquery))`, with the subquery reading the join's broadcast where
 * one is reused. This binds the scan's key-set listing ([[RuntimeKeyed]]) to that subquery, so the listing, made
 * when the scan runs, reads the keys (waiting for them if they are not there yet: the subquery runs once).
 */
object RuntimeKeys {

  /** The keys of a run-time filter: the subquery's rows (its one column), distinct. */
  final case class OfSubquery(sub: InSubqueryExec) extends KeySource {
    override def keys(): Array[Any] = {
      val dt = sub.plan.output.head.dataType
      sub.plan.executeCollect().map(_.get(0, dt))
    }
  }

  /** `plan` with every key-set listing under a run-time filter bound to that filter's keys. */
  def bind(plan: SparkPlan, session: SparkSession, formats: Seq[TableFormat]): SparkPlan = plan.transformUp {
    case f: FilterExec if hasRuntimeFilter(f.condition) =>
      val subs = runtimeFilters(f.condition)
      val child = bindUnder(f.child, subs, session, formats)
      if (child eq f.child) f else f.copy(child = child)
  }

  private def hasRuntimeFilter(e: Expression): Boolean = e.exists {
    case DynamicPruningExpression(_: InSubqueryExec) => true
    case _ => false
  }

  /** The run-time filters of a condition, by the column they filter. */
  private def runtimeFilters(e: Expression): Map[ExprId, InSubqueryExec] = e.collect {
    case DynamicPruningExpression(s: InSubqueryExec) if keyColumn(s.child).isDefined =>
      keyColumn(s.child).get._1.exprId -> s
  }.toMap

  /**
   * The column a run-time filter's key is, and the value standing for NULL (`<=>`: Spark's join keys compare
   * `coalesce(c, d)`); None for any other expression. Planting and binding read keys the same way.
   */
  def keyColumn(e: Expression): Option[(Attribute, Option[Any])] = e match {
    case a: Attribute => Some((a, None))
    case Coalesce(Seq(a: Attribute, Literal(d, _))) if d != null => Some((a, Some(d)))
    case _ => None
  }

  private def bindUnder(p: SparkPlan, subs: Map[ExprId, InSubqueryExec], session: SparkSession,
                        formats: Seq[TableFormat]): SparkPlan = p match {
    case b: BatchScanExec =>
      b.output.iterator.filter(a => subs.contains(a.exprId)).flatMap { a =>
        val (attr, nullFor) = keyColumn(subs(a.exprId).child).get
        try TableFormat.first(formats)(_.keySetPhysical(session, b, attr, nullFor, OfSubquery(subs(a.exprId))))
        catch {
          case NonFatal(e) =>
            org.slf4j.LoggerFactory.getLogger(getClass).warn(s"sparkbloom: run-time pruning of a V2 scan left out: $e")
            None
        }
      }.toSeq.headOption
        // Under the metrics node right away: Spark's V2 scan compares equal to the one it replaces (its scan's
        // equality is the original scan's), and a plan transform would keep the old one.
        .map(BloomScanMetricsExec(_)).getOrElse(b)
    case s: FileSourceScanExec => s.relation.location match {
        case k: RuntimeKeyed if !k.keySet.bound && subs.contains(k.keySet.keyAttr) =>
          val bound = k.bind(OfSubquery(subs(k.keySet.keyAttr)))
          s.copy(relation = s.relation.copy(location = bound)(s.relation.sparkSession))
        case _ => s
      }
    case pr: ProjectExec =>
      val c = bindUnder(pr.child, subs, session, formats); if (c eq pr.child) pr else pr.copy(child = c)
    case f: FilterExec =>
      val c = bindUnder(f.child, subs, session, formats); if (c eq f.child) f else f.copy(child = c)
    case other => other
  }
}
