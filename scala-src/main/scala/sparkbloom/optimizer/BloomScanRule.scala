package sparkbloom.optimizer

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.slf4j.LoggerFactory

import sparkbloom.BloomConf
import sparkbloom.index.TableFormat
import sparkbloom.scan.{BloomScanMetricsExec, RuntimeKeys}

/**
 * Physical planning: scans the table formats prune only once Spark has pushed filters into them (Spark's V2
 * Parquet scan) are rewritten by their format, and a [[BloomScanMetricsExec]] goes over every scan that bloom
 * indexes or the files' own bloom filters prune, with the figures as SQL metrics. It runs as a columnar rule
 * (before Spark inserts row/columnar transitions), because those run for every physical plan, with or without
 * adaptive execution (`injectQueryPostPlannerStrategyRule` only runs under AQE, which a plain
 * `SELECT ... WHERE` without an exchange never uses). Idempotent: AQE applies it once per query stage.
 */
class BloomScanRule(session: SparkSession, formats: Seq[TableFormat]) extends ColumnarRule {
  private val log = LoggerFactory.getLogger(getClass)

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = wrap(RuntimeKeys.bind(plan, session, formats))
  }

  private def wrap(p: SparkPlan): SparkPlan = p match {
    case m: BloomScanMetricsExec => m
    case s: FileSourceScanExec => if (measured(s)) BloomScanMetricsExec(s) else s
    case b: BatchScanExec if measured(b) => BloomScanMetricsExec(b)
    case b: BatchScanExec if BloomConf.enabled(session) =>
      // A rewritten scan nothing prunes (it only reads some files with fewer pushed filters, NanGuard) is kept
      // without a metrics node.
      try TableFormat.first(formats)(_.rewritePhysical(session, b)).map(w =>
          if (measured(w)) BloomScanMetricsExec(w) else w).getOrElse(b)
      catch { case NonFatal(e) => log.warn(s"sparkbloom: V2 scan left as it was after an error: $e"); b }
    case other if other.children.isEmpty => other
    case other =>
      val kids = other.children.map(wrap)
      if (kids.zip(other.children).forall { case (a, b) => a eq b }) other else other.withNewChildren(kids)
  }

  /** Whether bloom indexes or native filters prune the scan (its figures are worth a metrics node). */
  private def measured(scan: SparkPlan): Boolean =
    BloomScanMetricsExec.pruner(scan).isDefined || BloomScanMetricsExec.nativeMetrics(scan).isDefined
}
