package sparkbloom.scan

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, Coalesce, DynamicPruningExpression, EqualNullSafe, EqualTo, ExprId, Expression, In, InSet, Literal,
  PredicateHelper
}
import org.apache.spark.sql.execution.{
  FileSourceScanExec, FilterExec, InSubqueryExec, ProjectExec, SQLExecution, SparkPlan
}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec

import sparkbloom.BloomConf
import sparkbloom.index.{KeySource, RuntimeKeyed, TableFormat}
import sparkbloom.shims.DynamicPruning

/**
 * The physical half of key-set pruning. Spark plans the run-time filter the optimizer planted
 * ([[sparkbloom.optimizer.KeySetPruningRule]]) into a `FilterExec` over the scan holding
 * `DynamicPruningExpression(InSubqueryExec(key, subquery))`, with the subquery reading the join's broadcast where
 * one is reused. This binds the scan's key-set listing ([[RuntimeKeyed]]) to that subquery, so the listing, made
 * when the scan runs, reads the keys (waiting for them if they are not there yet: the subquery runs once).
 */
object RuntimeKeys extends PredicateHelper {

  /** The keys of a run-time filter: the subquery's rows (its one column), distinct. */
  final case class OfSubquery(sub: InSubqueryExec) extends KeySource {
    override def keys(): Array[Any] = {
      val in = live(sub)
      val dt = in.plan.output.head.dataType
      in.plan.executeCollect().map(_.get(0, dt))
    }
  }

  /**
   * The run-time filter `sub` as the plan now executing holds it. Without adaptive execution Spark's last
   * preparation rule (`ReuseExchangeAndSubquery`) runs after the binding (a columnar rule) and gives the filter a
   * new subquery, reading the join's broadcast; the one bound still holds a broadcast exchange of its own, and
   * reading the keys from it computes the join's key side a second time: a Delta MERGE's source, counted into
   * its numSourceRows twice (issue 47), a key side that is not deterministic giving other keys than the join's.
   * The filter executing has its keys already (Spark waits for a filter's subqueries before its child runs),
   * and is found by its id in the execution's plan. Only while a pruned scan executes (its plan is then made; a
   * listing during planning must not ask for the plan being made), and never under adaptive execution, where
   * the binding sees each stage's final plan and the execution's plan (its adaptive root) shows none: `sub`.
   */
  private def live(sub: InSubqueryExec): InSubqueryExec = if (!inScan.get()) sub
  else try {
    val found = Option(sub.plan.session.sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))
      .flatMap(id => Option(SQLExecution.getQueryExecution(id.toLong))).toSeq
      .flatMap(_.executedPlan.collectWithSubqueries { case p => p.expressions }.flatten)
      .flatMap(_.collect { case s: InSubqueryExec if s.exprId == sub.exprId => s })
    if (found.exists(_ eq sub)) sub else found.headOption.getOrElse(sub)
  } catch { case NonFatal(_) => sub }

  private val inScan = new ThreadLocal[Boolean] { override def initialValue(): Boolean = false }

  /** `f` (a pruned scan making its RDD, where its listing reads the keys) marked as executing. */
  def executing[T](f: => T): T = {
    val outer = inScan.get()
    inScan.set(true)
    try f
    finally inScan.set(outer)
  }

  /**
   * The keys of literal equalities (`c = v`, `c <=> v`, `c IN (v, ...)`) filtering a row-level operation's read
   * of its target: known at planning, read at run time like any other keys.
   */
  final case class OfLiterals(values: Seq[Any]) extends KeySource {
    override def keys(): Array[Any] = values.toArray
    override def label(column: String): String =
      s"$column IN (${values.size} literal key${if (values.size == 1) "" else "s"})"
  }

  /**
   * `plan` with every key-set listing under a run-time filter bound to that filter's keys, and the read of a
   * merge-on-read MERGE, UPDATE or DELETE under literal equalities bound to those literals.
   */
  def bind(plan: SparkPlan, session: SparkSession, formats: Seq[TableFormat]): SparkPlan = plan.transformUp {
    case f0: FilterExec if hasRuntimeFilter(f0.condition) =>
      val f = broadcastKeySets(f0)
      val subs = runtimeFilters(f.condition).map { case (id, s) =>
        val (attr, nullFor) = keyColumn(s.child).get
        id -> (attr, nullFor, OfSubquery(s): KeySource)
      }
      val child = bindUnder(f.child, subs, session, formats)
      if (child eq f.child) f else f.copy(child = child)
    case f: FilterExec if BloomConf.enabled(session) && readsOperationTable(f.child) =>
      val subs = literalKeys(f.condition).map { case (id, (attr, values)) =>
        id -> (attr, None, OfLiterals(values): KeySource)
      }
      val child = if (subs.isEmpty) f.child else bindUnder(f.child, subs, session, formats)
      if (child eq f.child) f else f.copy(child = child)
  }

  /**
   * Whether `p` reads a table through Spark's row-level operation table (the target of a MERGE, UPDATE or
   * DELETE). Plain reads with literal equalities are pruned when they are planned (the literal rule); these
   * are not, so their filter's literals are bound here. Rows the filter drops are dropped whatever is read, so
   * skipping the files that hold none of the literals changes nothing above it.
   */
  private def readsOperationTable(p: SparkPlan): Boolean = p match {
    case b: BatchScanExec => b.table.getClass.getName == OperationTable
    case pr: ProjectExec => readsOperationTable(pr.child)
    case f: FilterExec => readsOperationTable(f.child)
    case _ => false
  }
  private val OperationTable = "org.apache.spark.sql.connector.write.RowLevelOperationTable"

  /**
   * The literal keys a condition's conjuncts give its columns: `c = v` and `c <=> v` (v not NULL), `c IN (v, ...)`
   * and its `InSet` form, with literals of the column's own type only (Spark's coercion already made them so; any
   * cast left means the types differ, and the conjunct is ignored). NULLs in an `IN` list match no row.
   */
  private[scan] def literalKeys(cond: Expression): Map[ExprId, (Attribute, Seq[Any])] = {
    splitConjunctivePredicates(cond).flatMap {
      case EqualTo(a: Attribute, Literal(v, t)) if v != null && t == a.dataType => Some(a -> Seq(v))
      case EqualTo(Literal(v, t), a: Attribute) if v != null && t == a.dataType => Some(a -> Seq(v))
      case EqualNullSafe(a: Attribute, Literal(v, t)) if v != null && t == a.dataType => Some(a -> Seq(v))
      case EqualNullSafe(Literal(v, t), a: Attribute) if v != null && t == a.dataType => Some(a -> Seq(v))
      case In(a: Attribute, list) if list.nonEmpty && list.forall {
            case Literal(_, t) => t == a.dataType
            case _ => false
          } =>
        val vs = list.collect { case Literal(v, _) if v != null => v }
        if (vs.isEmpty) None else Some(a -> vs)
      case InSet(a: Attribute, set) if set.nonEmpty && !set.contains(null) => Some(a -> set.toSeq)
      case _ => None
    }.groupBy(_._1.exprId).map { case (id, found) => id -> found.head }
  }

  /**
   * `f` with the subquery of every run-time filter key-set pruning planted made to broadcast its keys. Spark plans
   * a run-time filter's `InSubqueryExec` without a broadcast: its own are partition filters, evaluated on the
   * driver. Ours is a row filter too. Compiled (whole-stage code generation) it carries the keys in its code, but
   * evaluated row by row (code generation off, a stage wider than `spark.sql.codegen.maxFields`, or a stage whose
   * code did not compile) it runs on the executors, where a subquery's keys reach only through a broadcast: without
   * one every task failed ("... has not finished"). Spark's own `IN (subquery)` row filters broadcast the same way.
   */
  private def broadcastKeySets(f: FilterExec): FilterExec = {
    val cond = f.condition.transformUp {
      case k @ KeySetFilter(DynamicPruningExpression(s: InSubqueryExec)) =>
        DynamicPruning.broadcastingKeys(s).map(b => KeySetFilter(DynamicPruningExpression(b))).getOrElse(k)
    }
    if (cond fastEquals f.condition) f else f.copy(condition = cond)
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

  /** Keys by the column they prune: the column, the value standing for NULL (`<=>`), where the keys come from. */
  private type Keyed = Map[ExprId, (Attribute, Option[Any], KeySource)]

  private def bindUnder(p: SparkPlan, subs: Keyed, session: SparkSession, formats: Seq[TableFormat]): SparkPlan =
    p match {
      case b: BatchScanExec =>
        b.output.iterator.filter(a => subs.contains(a.exprId)).flatMap { a =>
          val (attr, nullFor, keys) = subs(a.exprId)
          try TableFormat.first(formats)(_.keySetPhysical(session, b, attr, nullFor, keys))
          catch {
            case NonFatal(e) =>
              org.slf4j.LoggerFactory.getLogger(getClass).warn(
                s"sparkbloom: run-time pruning of a V2 scan left out: $e")
              None
          }
        }.toSeq.headOption
          // Under the metrics node right away: Spark's V2 scan compares equal to the one it replaces (its scan's
          // equality is the original scan's), and a plan transform would keep the old one.
          .map(BloomScanMetricsExec(_)).getOrElse(b)
      case s: FileSourceScanExec => s.relation.location match {
          case k: RuntimeKeyed if !k.keySet.bound && subs.contains(k.keySet.keyAttr) =>
            val bound = k.bind(subs(k.keySet.keyAttr)._3)
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
