package sparkbloom.formats.iceberg

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.iceberg.{
  BaseTable, BatchScan, FileScanTask, HasTableOperations, ScanTask, Schema, Table, TableOperations
}
import org.apache.iceberg.io.CloseableIterable
import org.apache.spark.sql.SparkSession

import sparkbloom.index.{IndexPruner, SerializableConf}

/**
 * An Iceberg table that is `delegate` in every way but one: its batch scans leave out the data-file tasks the
 * bloom indexes rule out. Not a `BaseTable`, so Iceberg pushes no aggregate into it (an aggregate answered
 * from manifests would not see the pruning), and its scan builder would plan it locally; so the scan is made
 * here as Iceberg would make it for `delegate`: its distributed scan when the session and table planning modes
 * allow one (Iceberg then reads large manifests on the executors).
 */
class PrunedIcebergTable(val delegate: BaseTable, val pruner: IndexPruner, conf: SerializableConf,
                         val pin: Option[Long] = None)
  extends Table with HasTableOperations with Serializable {

  /** The tasks of `tasks` that may hold matching rows (all of them after any error). */
  private[iceberg] def prune(tasks: CloseableIterable[ScanTask]): CloseableIterable[ScanTask] = {
    val all = try tasks.asScala.toVector
    finally tasks.close()
    val data = all.zipWithIndex.collect { case (f: FileScanTask, i) => (f, i) }
    val keep = try {
      // One status per distinct data file (a file split into several tasks is decided once).
      val files =
        data.map(_._1.file()).map(f => (IcebergFormat.qualify(f.location(), conf.value), f.fileSizeInBytes())).distinct
      val statuses = files.map { case (p, size) => new FileStatus(size, false, 0, 0L, 0L, new Path(p)) }.toArray
      val kept = pruner.keep(statuses)
      val keptFiles = files.indices.filter(kept.get).map(files).toSet
      data.filterNot { case (f, _) =>
        keptFiles.contains((IcebergFormat.qualify(f.file().location(), conf.value), f.file().fileSizeInBytes()))
      }
        .map(_._2).toSet
    } catch {
      case NonFatal(e) =>
        org.slf4j.LoggerFactory.getLogger(getClass)
          .warn(
            s"sparkbloom: reading every file Iceberg planned for ${pruner.tableName} after an error while pruning: $e")
        Set.empty[Int]
    }
    CloseableIterable.withNoopClose(all.indices.filterNot(keep.contains).map(all).asJava)
  }

  /**
   * A batch scan of `delegate` whose plans leave out what the indexes rule out; reading snapshot `pin` when one
   * is set (Iceberg 1.11's scan builder pins the snapshot of a read only for a `BaseTable` or a time travel, so
   * a branch read of this table would otherwise scan the main branch; Iceberg's consistency check refuses that).
   */
  override def newBatchScan(): BatchScan = pin match {
    case Some(id) => new PrunedBatchScan(planningScan().useSnapshot(id), this, pin)
    case None => new PrunedBatchScan(planningScan(), this, None)
  }

  /**
   * The scan Iceberg's scan builder would start from for `delegate`: its distributed scan (which plans large
   * manifests on the executors, AUTO mode deciding per scan) when the table allows it and the session or table
   * planning modes are not both local (Iceberg's `SparkReadConf` decides, as for its own reads); else the
   * table's own local batch scan, also after any error.
   */
  private def planningScan(): BatchScan =
    try {
      val spark = SparkSession.active
      val readConf = IcebergTables.readConf(spark, delegate)
      if (readConf.distributedPlanningEnabled())
        new org.apache.iceberg.SparkDistributedDataScan(spark, delegate, readConf)
      else delegate.newBatchScan()
    } catch { case NonFatal(_) => delegate.newBatchScan() }

  override def name(): String = delegate.name()
  override def refresh(): Unit = delegate.refresh()
  override def newScan(): org.apache.iceberg.TableScan = delegate.newScan()
  override def newIncrementalAppendScan(): org.apache.iceberg.IncrementalAppendScan =
    delegate.newIncrementalAppendScan()
  override def newIncrementalChangelogScan(): org.apache.iceberg.IncrementalChangelogScan =
    delegate.newIncrementalChangelogScan()
  override def schema(): Schema = delegate.schema()
  override def schemas(): java.util.Map[Integer, Schema] = delegate.schemas()
  override def spec(): org.apache.iceberg.PartitionSpec = delegate.spec()
  override def specs(): java.util.Map[Integer, org.apache.iceberg.PartitionSpec] = delegate.specs()
  override def sortOrder(): org.apache.iceberg.SortOrder = delegate.sortOrder()
  override def sortOrders(): java.util.Map[Integer, org.apache.iceberg.SortOrder] = delegate.sortOrders()
  override def properties(): java.util.Map[String, String] = delegate.properties()
  override def location(): String = delegate.location()
  override def currentSnapshot(): org.apache.iceberg.Snapshot = delegate.currentSnapshot()
  override def snapshot(id: Long): org.apache.iceberg.Snapshot = delegate.snapshot(id)
  override def snapshot(ref: String): org.apache.iceberg.Snapshot = delegate.snapshot(ref)
  override def snapshots(): java.lang.Iterable[org.apache.iceberg.Snapshot] = delegate.snapshots()
  override def history(): java.util.List[org.apache.iceberg.HistoryEntry] = delegate.history()
  override def updateSchema(): org.apache.iceberg.UpdateSchema = delegate.updateSchema()
  override def updateSpec(): org.apache.iceberg.UpdatePartitionSpec = delegate.updateSpec()
  override def updateProperties(): org.apache.iceberg.UpdateProperties = delegate.updateProperties()
  override def replaceSortOrder(): org.apache.iceberg.ReplaceSortOrder = delegate.replaceSortOrder()
  override def updateLocation(): org.apache.iceberg.UpdateLocation = delegate.updateLocation()
  override def newAppend(): org.apache.iceberg.AppendFiles = delegate.newAppend()
  override def newFastAppend(): org.apache.iceberg.AppendFiles = delegate.newFastAppend()
  override def newRewrite(): org.apache.iceberg.RewriteFiles = delegate.newRewrite()
  override def rewriteManifests(): org.apache.iceberg.RewriteManifests = delegate.rewriteManifests()
  override def newOverwrite(): org.apache.iceberg.OverwriteFiles = delegate.newOverwrite()
  override def newRowDelta(): org.apache.iceberg.RowDelta = delegate.newRowDelta()
  override def newReplacePartitions(): org.apache.iceberg.ReplacePartitions = delegate.newReplacePartitions()
  override def newDelete(): org.apache.iceberg.DeleteFiles = delegate.newDelete()
  override def updateStatistics(): org.apache.iceberg.UpdateStatistics = delegate.updateStatistics()
  override def updatePartitionStatistics(): org.apache.iceberg.UpdatePartitionStatistics =
    delegate.updatePartitionStatistics()
  override def expireSnapshots(): org.apache.iceberg.ExpireSnapshots = delegate.expireSnapshots()
  override def manageSnapshots(): org.apache.iceberg.ManageSnapshots = delegate.manageSnapshots()
  override def newTransaction(): org.apache.iceberg.Transaction = delegate.newTransaction()
  override def io(): org.apache.iceberg.io.FileIO = delegate.io()
  override def encryption(): org.apache.iceberg.encryption.EncryptionManager = delegate.encryption()
  override def locationProvider(): org.apache.iceberg.io.LocationProvider = delegate.locationProvider()
  override def statisticsFiles(): java.util.List[org.apache.iceberg.StatisticsFile] = delegate.statisticsFiles()
  override def partitionStatisticsFiles(): java.util.List[org.apache.iceberg.PartitionStatisticsFile] =
    delegate.partitionStatisticsFiles()
  override def refs(): java.util.Map[String, org.apache.iceberg.SnapshotRef] = delegate.refs()
  override def uuid(): java.util.UUID = delegate.uuid()
  override def operations(): TableOperations = delegate.operations()
  override def toString: String = delegate.toString
}
