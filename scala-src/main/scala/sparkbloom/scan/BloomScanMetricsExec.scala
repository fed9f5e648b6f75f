package sparkbloom.scan

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{FileSourceScanExec, SQLExecution, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.vectorized.ColumnarBatch

import sparkbloom.index.{IndexPruner, PrunedSource}

/**
 * What bloom indexes did for one file scan, as SQL metrics in the Spark UI (SQL tab) and in the executed
 * plan: files and row groups skipped, index bytes read, probe time. Spark's scan node has a fixed set of
 * metrics, so this node sits directly above it and hands its rows or batches through untouched (no copy,
 * no per-row work); the figures are those of the scan's [[BloomSkippingFileIndex]] once the scan has listed
 * its files (planning work on the driver), posted as driver-side metrics the way Spark's scan posts its own.
 */
case class BloomScanMetricsExec(child: SparkPlan) extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def supportsColumnar: Boolean = child.supportsColumnar
  override def vectorTypes: Option[Seq[String]] = child.vectorTypes
  override def nodeName: String = "BloomIndexSkipping"

  private def index: Option[IndexPruner] = BloomScanMetricsExec.pruner(child)

  override def simpleString(maxFields: Int): String =
    s"$nodeName ${index.map(i => s"[${i.indexNames}] [${i.predicateSql}]").getOrElse("")}" +
      BloomScanMetricsExec.nativeSpec(child).filter(_.metrics != null).map(n =>
        s" native filters [${n.all.sql}]").getOrElse("")

  private def native: Option[NativeMetrics] = BloomScanMetricsExec.nativeMetrics(child)

  override lazy val metrics: Map[String, SQLMetric] =
    (if (index.isEmpty) Map.empty[String, SQLMetric]
     else Map(
       "filesSkipped" -> SQLMetrics.createMetric(sparkContext, "files skipped by bloom indexes"),
       "rowGroupsSkipped" -> SQLMetrics.createMetric(sparkContext, "row groups skipped by bloom indexes"),
       "filesNotCovered" -> SQLMetrics.createMetric(sparkContext, "files not covered by bloom indexes"),
       "indexBytesRead" -> SQLMetrics.createSizeMetric(sparkContext, "bloom index bytes read"),
       "probeTime" -> SQLMetrics.createTimingMetric(sparkContext, "bloom index probe time"),
       "keysProbed" -> SQLMetrics.createMetric(sparkContext, "run-time keys probed"))) ++
      native.map(_.all).getOrElse(Map.empty) // updated by the scan's tasks

  override protected def doExecute(): RDD[InternalRow] = {
    val rdd = RuntimeKeys.executing(child.execute()); report(); ExecutedScans.record(this, child); rdd
  }
  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = {
    val rdd = RuntimeKeys.executing(child.executeColumnar()); report(); ExecutedScans.record(this, child); rdd
  }

  /** Called once the scan has made its RDD, i.e. listed (and pruned) its files. */
  private def report(): Unit = if (index.isDefined) index.flatMap(_.lastSkipping).foreach { k =>
    metrics("filesSkipped").set(k.filesTotal - k.filesKept)
    metrics("rowGroupsSkipped").set(k.rowGroupsTotal - k.rowGroupsKept)
    metrics("filesNotCovered").set(k.filesNotCovered)
    metrics("indexBytesRead").set(k.indexBytesRead)
    metrics("probeTime").set(k.probeTimeNs / 1000000L)
    metrics("keysProbed").set(k.keysProbed)
    val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId,
      Seq("filesSkipped", "rowGroupsSkipped", "filesNotCovered", "indexBytesRead", "probeTime", "keysProbed")
        .map(metrics))
  }

  override protected def withNewChildInternal(newChild: SparkPlan): BloomScanMetricsExec = copy(child = newChild)
}

object BloomScanMetricsExec {
  /**
   * The bloom-index decision of a scan: a V1 file index (Parquet, Delta), the V2 Parquet scan, or a V2 table
   * whose planning is pruned (Iceberg).
   */
  def pruner(p: SparkPlan): Option[IndexPruner] = p match {
    case s: FileSourceScanExec => s.relation.location match {
        case b: PrunedSource => Some(b.pruner)
        case _ => None
      }
    case b: BatchScanExec => b.scan match {
        case v: BloomParquetScanV2 => v.index.map(_.pruner)
        case v: PrunedSource => Some(v.pruner) // Iceberg's scan pruned by run-time keys
        case _ => b.table match {
            case t: PrunedSource => Some(t.pruner)
            case _ => None
          }
      }
    case _ => None
  }

  /** The native-filter counters of a scan that checks native bloom filters at read time. */
  def nativeMetrics(p: SparkPlan): Option[NativeMetrics] = nativeSpec(p).flatMap(n => Option(n.metrics))

  def nativeSpec(p: SparkPlan): Option[NativeSpec] = p match {
    case s: FileSourceScanExec => s.relation.fileFormat match {
        case b: BloomParquetFileFormat => b.native
        case _ => None
      }
    case b: BatchScanExec => b.scan match {
        case v: BloomParquetScanV2 => Some(v.spec)
        case _ => None
      }
    case _ => None
  }
}
