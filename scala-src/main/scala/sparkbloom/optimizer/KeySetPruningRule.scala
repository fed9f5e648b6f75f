package sparkbloom.optimizer

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, DynamicPruningSubquery, EqualTo, Exists, Expression, InSubquery, InputFileBlockLength, InputFileBlockStart,
  InputFileName, ListQuery, MonotonicallyIncreasingID, OuterReference, PredicateHelper
}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.{Cross, Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project, Statistics}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.internal.SQLConf

import sparkbloom.BloomConf
import sparkbloom.index.TableFormat
import sparkbloom.scan.{KeySetFilter, RuntimeKeys}
import sparkbloom.shims.DynamicPruning

/**
 * Key-set pruning, planned: where an indexed column of a scan is equated with keys another part of the plan
 * produces, the scan gets Spark's own run-time filter (a `DynamicPruningSubquery`, as dynamic partition pruning
 * plants) on that column, and its table format swaps its file listing for one that, at execution, keeps only
 * the files (and row groups) whose filters may hold one of the keys ([[TableFormat.keySetScan]]). Spark plans
 * the filter as DPP does, reusing the join's broadcast where there is one; the physical rule
 * ([[sparkbloom.scan.RuntimeKeys]]) hands its keys to the listing.
 *
 * Where keys come from, and which side may be pruned (only a side whose unmatched rows are dropped):
 *  - an equi-join (`=`, `<=>`): both sides of an inner join, the left of a left semi join, the right of a left
 *    outer join, the left of a right outer join; never a full outer or anti join;
 *  - `c IN (SELECT ...)` and `EXISTS (... WHERE inner = outer.c)` conjuncts of a filter (Spark makes them
 *    left semi joins later); NOT IN and NOT EXISTS never.
 *
 * Planned only when it can pay: the key side is estimated to hold at most `runtimePruning.maxKeys` keys, the
 * scanned table is at least `runtimePruning.minTableSize`, and Spark's dynamic partition pruning (whose
 * planning it uses) is on. A key side that is not deterministic (a MERGE source counting its rows) is used
 * only through the join's own broadcast, never computed twice.
 *
 * Runs among the pre-CBO rules, after the literal rewrites, once per plan. Any exception: plan unchanged.
 */
class KeySetPruningRule(session: SparkSession, formats: Seq[TableFormat]) extends Rule[LogicalPlan]
  with PredicateHelper {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (formats.isEmpty || !BloomConf.enabled(session) || !BloomConf.runtimePruning(session) ||
      !SQLConf.get.dynamicPartitionPruningEnabled) return plan
    try plan.transformUp {
        case j: Join => pruneJoin(j).getOrElse(j)
        case f @ Filter(cond, child) if cond.exists(e => e.isInstanceOf[InSubquery] || e.isInstanceOf[Exists]) =>
          pruneBySubqueries(f, cond, child).getOrElse(f)
      }
    catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: run-time pruning not planned after an error: $e")
        plan
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Joins

  private def pruneJoin(j: Join): Option[LogicalPlan] = {
    val (leftKeys, rightKeys) = ExtractEquiJoinKeys.unapply(j) match {
      case Some(t) => (t._2, t._3)
      case None => return None
    }
    if (leftKeys.isEmpty) return None
    val (pruneLeft, pruneRight) = prunableSides(j.joinType)
    // A side is tried only where an index covers its key, before any size estimate (estimating a V2 relation builds
    // its scan). One side per join: the larger one, if both may be pruned (a key side must not depend on its own
    // pruning).
    val left = if (pruneLeft) pruneSide(j.left, leftKeys, j.right, rightKeys, "a join").map(n => j.copy(left = n))
    else None
    val right = if (pruneRight) pruneSide(j.right, rightKeys, j.left, leftKeys, "a join").map(n => j.copy(right = n))
    else None
    (left, right) match {
      case (Some(l), Some(r)) =>
        val big = BigInt(Long.MaxValue)
        if (size(j.left).getOrElse(big) >= size(j.right).getOrElse(big)) Some(l) else Some(r)
      case _ => left.orElse(right)
    }
  }

  /** (left may be pruned, right may be pruned): only a side whose rows without a match are dropped. */
  private def prunableSides(t: JoinType): (Boolean, Boolean) = t match {
    case Inner | Cross => (true, true)
    case LeftSemi => (true, false)
    case LeftOuter => (false, true)
    case RightOuter => (true, false)
    case _ => (false, false) // full outer, anti, existence joins
  }

  /** `side` with a run-time filter on its first key that an index covers, keyed by `buildKeys` of `build`. */
  private def pruneSide(side: LogicalPlan, keys: Seq[Expression], build: LogicalPlan, buildKeys: Seq[Expression],
                        what: String): Option[LogicalPlan] =
    keys.indices.iterator.map(i => plant(side, keys(i), build, buildKeys, i, what)).collectFirst { case Some(p) => p }
      .filter(_ => worthIt(side, build))

  // ---------------------------------------------------------------------------------------------
  // IN (subquery) and EXISTS

  private def pruneBySubqueries(f: Filter, cond: Expression, child: LogicalPlan): Option[LogicalPlan] = {
    val candidates: Seq[(Expression, LogicalPlan, Seq[Expression], Int, String)] =
      splitConjunctivePredicates(cond).flatMap {
        case InSubquery(values, q: ListQuery) if !correlatedInside(q.plan) =>
          val outs = q.plan.output.take(values.length)
          values.indices.map(i => (values(i), q.plan, outs, i, "IN (subquery)"))
        case e: Exists if e.joinCond.nonEmpty && !correlatedInside(e.plan) =>
          e.joinCond.flatMap(splitConjunctivePredicates).collect {
            case EqualTo(a, b)
                if b.references.nonEmpty && b.references.subsetOf(e.plan.outputSet) &&
                  a.references.subsetOf(child.outputSet) => (a, e.plan, Seq(b), 0, "EXISTS")
            case EqualTo(b, a)
                if b.references.nonEmpty && b.references.subsetOf(e.plan.outputSet) &&
                  a.references.subsetOf(child.outputSet) => (a, e.plan, Seq(b), 0, "EXISTS")
          }
        case _ => Nil
      }
    candidates.iterator.map { case (key, build, buildKeys, i, what) =>
      plant(child, key, build, buildKeys, i, what).filter(_ => worthIt(child, build)).map(c => f.copy(child = c))
    }.collectFirst { case Some(p) => p }
  }

  /** Whether the (decorrelated) subquery plan still refers to the outer query: then its keys are not known. */
  private def correlatedInside(p: LogicalPlan): Boolean =
    p.exists(_.expressions.exists(_.exists(_.isInstanceOf[OuterReference])))

  // ---------------------------------------------------------------------------------------------
  // Planting the run-time filter

  /** Estimated keys within the cap, and a table big enough to be worth it. */
  private def worthIt(side: LogicalPlan, build: LogicalPlan): Boolean = {
    if (side.isStreaming || build.isStreaming) return false
    val rowSize = math.max(1L, build.output.map(a => a.dataType.defaultSize.toLong).sum + 8L)
    // Unknown size (an RDD, e.g. the source a MERGE has checkpointed; a V2 table before its scan is built):
    // planned, and the key cap applies at run time.
    // (Spark scales the default size of such a leaf down through projections: the leaves tell.)
    def unknown(p: LogicalPlan): Boolean =
      stats(p).forall(st => st.rowCount.isEmpty && st.sizeInBytes >= SQLConf.get.defaultSizeInBytes)
    val keys: Option[BigInt] =
      if (build.collectLeaves().exists(unknown)) None
      else stats(build).map(st => st.rowCount.getOrElse(st.sizeInBytes / rowSize))
    keys.forall(_ <= BloomConf.runtimeMaxKeys(session)) &&
    size(side).forall(_ >= BloomConf.runtimeMinTableSize(session))
  }

  /** Spark's estimate, None where it cannot give one yet (a V2 relation before its scan is built). */
  private def stats(p: LogicalPlan): Option[Statistics] = try Some(p.stats)
  catch { case NonFatal(_) => None }
  private def size(p: LogicalPlan): Option[BigInt] = stats(p).map(_.sizeInBytes)

  /**
   * `side` with `Filter(run-time filter on key)` planted right above its scan, whose listing becomes key-set
   * pruned; None when the key is not a plain column of a scan under Project / Filter, or no index covers it.
   */
  private def plant(side: LogicalPlan, key: Expression, build: LogicalPlan, buildKeys: Seq[Expression], i: Int,
                    what: String): Option[LogicalPlan] = {
    val (attr, nullFor) = RuntimeKeys.keyColumn(key).getOrElse(return None)
    if (buildKeys(i).dataType != key.dataType || planted(side, attr)) return None
    val label = s"${attr.name} IN (run-time keys of $what)"
    descend(side, attr) { leaf =>
      TableFormat.first(formats)(_.keySetScan(session, leaf, attr, nullFor, label)).map { pruned =>
        // The key side is computed a second time unless the join's broadcast is reused: only if deterministic.
        // With `<=>` the key is coalesce(c, d): rows whose c is NULL are kept as d, as the join compares them.
        // A V2 table on the key side has not had its scan built yet (this rule runs before Spark pushes down into
        // V2 scans), so the key side is optimized on its own first.
        val keysPlan =
          if (build.exists(_.isInstanceOf[DataSourceV2Relation])) session.sessionState.optimizer.execute(build)
          else build
        Filter(KeySetFilter(DynamicPruning.subquery(key, keysPlan, buildKeys, i, !build.deterministic)), pruned)
      }
    }
  }

  /** Whether `side` already has a run-time filter on `attr` (the rule runs again over its own output). */
  private def planted(side: LogicalPlan, attr: Attribute): Boolean = side.exists {
    case Filter(c, _) => c.exists {
        case KeySetFilter(d: DynamicPruningSubquery) => d.pruningKey.references.contains(attr)
        case _ => false
      }
    case _ => false
  }

  /**
   * Down to the scan reading `attr` through projections that pass it through and deterministic filters (rows
   * the run-time filter drops would otherwise change what a non-deterministic expression sees; the row-identity
   * functions Delta's MERGE uses, file names and increasing ids, stay correct for the rows kept).
   */
  private def descend(p: LogicalPlan, attr: Attribute)(atLeaf: LogicalPlan => Option[LogicalPlan])
      : Option[LogicalPlan] = p match {
    case pr @ Project(list, child) if list.forall(rowSafe) && child.outputSet.contains(attr) =>
      descend(child, attr)(atLeaf).map(c => pr.copy(child = c))
    case f @ Filter(cond, child) if cond.deterministic && child.outputSet.contains(attr) =>
      descend(child, attr)(atLeaf).map(c => f.copy(child = c))
    case leaf if leaf.children.isEmpty && leaf.outputSet.contains(attr) => atLeaf(leaf)
    case _ => None
  }

  private def rowSafe(e: Expression): Boolean = e.deterministic || !e.exists {
    case _: MonotonicallyIncreasingID | _: InputFileName | _: InputFileBlockStart | _: InputFileBlockLength => false
    case x => !x.deterministic && x.children.forall(_.deterministic)
  }
}
