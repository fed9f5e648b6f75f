package sparkbloom.scan

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, SQLExecution, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * What bloom indexes did for one scan, as SQL metrics in the Spark UI and in the executed plan: files and
 * row groups skipped, index bytes read, probe time. Spark's scan node has a fixed set of metrics, so this
 * node sits right above it and passes its rows or batches through unchanged; the figures come from the
 * scan's [[BloomSkippingFileIndex]] once the scan has listed its files (planning work, on the driver).
 */
case class BloomScanMetricsExec(child: SparkPlan) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def supportsColumnar: Boolean = child.supportsColumnar
  override def vectorTypes: Option[Seq[String]] = child.vectorTypes

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "bloomFilesSkipped" -> SQLMetrics.createMetric(sparkContext, "files skipped by bloom indexes"),
    "bloomRowGroupsSkipped" -> SQLMetrics.createMetric(sparkContext, "row groups skipped by bloom indexes"),
    "bloomIndexBytesRead" -> SQLMetrics.createSizeMetric(sparkContext, "bloom index bytes read"),
    "bloomProbeTime" -> SQLMetrics.createNanoTimingMetric(sparkContext, "bloom index probe time"))

  override protected def doExecute(): RDD[InternalRow] = { val rdd = child.execute(); report(); rdd }
  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = { val rdd = child.executeColumnar(); report(); rdd }

  private def report(): Unit = child match {
    case s: FileSourceScanExec => s.relation.location match {
      case b: BloomSkippingFileIndex => b.lastSkipping.foreach { k =>
        metrics("bloomFilesSkipped").set(k.filesTotal - k.filesKept)
        metrics("bloomRowGroupsSkipped").set(k.rowGroupsTotal - k.rowGroupsKept)
        metrics("bloomIndexBytesRead").set(k.indexBytesRead)
        metrics("bloomProbeTime").set(k.probeTimeNs)
        val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
        SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, metrics.values.toSeq)
      }
      case _ =>
    }
    case _ =>
  }

  override protected def withNewChildInternal(newChild: SparkPlan): BloomScanMetricsExec = copy(child = newChild)
}

/** Puts a [[BloomScanMetricsExec]] over every scan whose files a bloom index prunes. */
class BloomScanMetricsRule(session: SparkSession) extends Rule[SparkPlan] {
  override def apply(plan: SparkPlan): SparkPlan = {
    if (plan.exists(_.isInstanceOf[BloomScanMetricsExec])) plan
    else plan.transformUp {
      case s: FileSourceScanExec if s.relation.location.isInstanceOf[BloomSkippingFileIndex] => BloomScanMetricsExec(s)
    }
  }
}
