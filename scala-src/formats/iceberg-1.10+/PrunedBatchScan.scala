package sparkbloom.formats.iceberg

import org.apache.iceberg.{BatchScan, ScanTask, ScanTaskGroup, Schema, Table}
import org.apache.iceberg.expressions.Expression
import org.apache.iceberg.io.CloseableIterable
import org.apache.iceberg.metrics.MetricsReporter
import org.apache.iceberg.util.TableScanUtil

/**
 * `delegate`, refined as Iceberg's scan builder asks, planning through [[PrunedIcebergTable.prune]]. `pinned`: the
 * snapshot `delegate` already reads; asking for it again is a no-op, asking for another one is Iceberg's error.
 */
class PrunedBatchScan(val delegate: BatchScan, owner: PrunedIcebergTable, pinned: Option[Long]) extends BatchScan {
  private def wrap(s: BatchScan): BatchScan = new PrunedBatchScan(s, owner, pinned)
  override def table(): Table = owner
  override def useSnapshot(id: Long): BatchScan = if (pinned.contains(id)) this else wrap(delegate.useSnapshot(id))
  override def useRef(ref: String): BatchScan = wrap(delegate.useRef(ref))
  override def asOfTime(ts: Long): BatchScan = wrap(delegate.asOfTime(ts))
  override def snapshot(): org.apache.iceberg.Snapshot = delegate.snapshot()
  override def option(k: String, v: String): BatchScan = wrap(delegate.option(k, v))
  override def project(s: Schema): BatchScan = wrap(delegate.project(s))
  override def caseSensitive(b: Boolean): BatchScan = wrap(delegate.caseSensitive(b))
  override def isCaseSensitive: Boolean = delegate.isCaseSensitive
  override def includeColumnStats(): BatchScan = wrap(delegate.includeColumnStats())
  override def includeColumnStats(cols: java.util.Collection[String]): BatchScan =
    wrap(delegate.includeColumnStats(cols))
  override def select(cols: java.util.Collection[String]): BatchScan = wrap(delegate.select(cols))
  override def filter(e: Expression): BatchScan = wrap(delegate.filter(e))
  override def filter(): Expression = delegate.filter()
  override def ignoreResiduals(): BatchScan = wrap(delegate.ignoreResiduals())
  override def planWith(pool: java.util.concurrent.ExecutorService): BatchScan = wrap(delegate.planWith(pool))
  override def schema(): Schema = delegate.schema()
  override def metricsReporter(r: MetricsReporter): BatchScan = wrap(delegate.metricsReporter(r))
  override def planFiles(): CloseableIterable[ScanTask] = owner.prune(delegate.planFiles())
  override def planTasks(): CloseableIterable[ScanTaskGroup[ScanTask]] =
    TableScanUtil.planTaskGroups(planFiles(), targetSplitSize(), splitLookback(), splitOpenFileCost())
  override def targetSplitSize(): Long = delegate.targetSplitSize()
  override def splitLookback(): Int = delegate.splitLookback()
  override def splitOpenFileCost(): Long = delegate.splitOpenFileCost()
}
