package sparkbloom.scan

import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

import sparkbloom.index.{PrunedSource, ScanSkipping}

object SkippingReport extends AdaptiveSparkPlanHelper {
  /**
   * The skipping of every bloom-pruned scan in a physical plan. A scan that has not listed its files yet
   * (the plan was never executed, e.g. `df.show()` ran a different plan) is asked to list them now; that is
   * planning work only, no data is read.
   */
  def forPlan(plan: SparkPlan): Seq[ScanSkipping] = collectWithSubqueries(plan) {
    case s: FileSourceScanExec if s.relation.location.isInstanceOf[PrunedSource] =>
      val pruner = s.relation.location.asInstanceOf[PrunedSource].pruner
      pruner.lastSkipping.orElse {
        s.relation.location.listFiles(s.partitionFilters, s.dataFilters)
        pruner.lastSkipping
      }.map(withNative(s, _))
    case b: org.apache.spark.sql.execution.datasources.v2.BatchScanExec if b.scan.isInstanceOf[PrunedSource] =>
      // Iceberg pruned by run-time keys: decided when the scan plans its partitions.
      val pruner = b.scan.asInstanceOf[PrunedSource].pruner
      pruner.lastSkipping.orElse { b.inputPartitions; b.scan.asInstanceOf[PrunedSource].pruner.lastSkipping }
    case b: org.apache.spark.sql.execution.datasources.v2.BatchScanExec if b.table.isInstanceOf[PrunedSource] =>
      // Iceberg: the decision is taken when the scan plans its tasks.
      val pruner = b.table.asInstanceOf[PrunedSource].pruner
      pruner.lastSkipping.orElse { b.inputPartitions; pruner.lastSkipping }
    case s: FileSourceScanExec if BloomScanMetricsExec.nativeMetrics(s).isDefined =>
      // No index: the files' own filters only. Files: those the scan read (0 before it ran).
      val files = s.metrics.get("numFiles").map(_.value).getOrElse(0L)
      val pred = BloomScanMetricsExec.nativeSpec(s).map(_.all.sql).getOrElse("")
      Some(withNative(s,
        ScanSkipping("", s.relation.location.rootPaths.mkString(", "), pred, files, files, 0L, 0L, files)))
    case b: org.apache.spark.sql.execution.datasources.v2.BatchScanExec
        if b.scan.isInstanceOf[BloomParquetScanV2] &&
          b.scan.asInstanceOf[BloomParquetScanV2].index.isDefined =>
      val index = b.scan.asInstanceOf[BloomParquetScanV2].index.get
      index.pruner.lastSkipping.orElse {
        b.scan.asInstanceOf[BloomParquetScanV2].planInputPartitions(); index.pruner.lastSkipping
      }.map(withNative(b, _))
    case b: org.apache.spark.sql.execution.datasources.v2.BatchScanExec
        if BloomScanMetricsExec.nativeMetrics(b).isDefined =>
      val v = b.scan.asInstanceOf[BloomParquetScanV2]
      val files = b.inputPartitions.iterator.flatMap { // the scan's own (planned once, then kept)
        case f: org.apache.spark.sql.execution.datasources.FilePartition => f.files.iterator.map(_.filePath)
        case _ => Iterator.empty
      }.toSet.size.toLong
      Some(withNative(b,
        ScanSkipping("", v.fileIndex.rootPaths.mkString(", "), v.spec.all.sql, files, files, 0L, 0L, files)))
  }.flatten

  /** A file scan's table (its catalog name, else its root paths) and format, as Spark names them. */
  def scanOf(p: SparkPlan): Option[(String, String)] = p match {
    case s: FileSourceScanExec => Some((
          s.tableIdentifier.map(_.unquotedString).getOrElse(s.relation.location.rootPaths.mkString(", ")),
          s.relation.fileFormat.toString))
    case b: org.apache.spark.sql.execution.datasources.v2.BatchScanExec => Some((b.table.name(), b.scan.description()))
    case _ => None
  }

  private def withNative(s: SparkPlan, k: ScanSkipping): ScanSkipping =
    BloomScanMetricsExec.nativeMetrics(s) match {
      case None => k
      case Some(m) =>
        val checked = m.rowGroupsChecked.value; val skipped = m.rowGroupsSkipped.value
        val base = if (k.index.nonEmpty) k else k.copy(rowGroupsTotal = checked, rowGroupsKept = checked - skipped)
        base.copy(nativeRowGroupsChecked = checked, nativeRowGroupsSkipped = skipped,
          nativeFiltersInvalid = m.filtersInvalid.value)
    }
}
