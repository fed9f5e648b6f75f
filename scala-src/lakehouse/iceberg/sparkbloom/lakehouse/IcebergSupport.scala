package sparkbloom.lakehouse

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.iceberg.{BaseTable, BatchScan, FileScanTask, HasTableOperations, ScanTask, ScanTaskGroup, Schema, Table, TableOperations}
import org.apache.iceberg.expressions.Expression
import org.apache.iceberg.io.CloseableIterable
import org.apache.iceberg.metrics.MetricsReporter
import org.apache.iceberg.spark.source.SparkTable
import org.apache.iceberg.util.TableScanUtil
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{ExprId, Expression => SparkExpression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

import sparkbloom.index.{DataFile, IndexedColumn, ResolvedTable, TableListing, TableRef}
import sparkbloom.optimizer.BloomSkippingRule
import sparkbloom.scan.{IndexPruner, NativeFilters, PrunedSource, RowGroupSelection}

/**
 * Apache Iceberg tables (iceberg-spark-runtime). An index covers the data files of the table's current
 * snapshot, keyed by location and size (Iceberg data files are immutable and never rewritten in place), and
 * its columns by Iceberg **field id**, which a RENAME COLUMN keeps: each data file is read by field id too.
 *
 * Pruning happens where Iceberg plans the scan: the optimizer rule (before Spark turns the relation into a
 * scan) swaps the `SparkTable` for a [[BloomSparkTable]] over a [[PrunedIcebergTable]], whose batch scans drop
 * the data-file tasks the indexes rule out, deletes and residuals untouched. Everything else (Iceberg's
 * manifests and statistics, its readers, row-group filtering by its own bloom filters) stays Iceberg's.
 * Tables other than a plain `BaseTable` (metadata tables), and plans that rewrite rows, are left alone.
 */
object IcebergSupport {
  val compiled: Boolean = true
  def tableRef(r: DataSourceV2Relation): Option[TableRef] = (r.catalog, r.identifier) match {
    case (Some(c), Some(id)) if r.table.asInstanceOf[SparkTable].table().isInstanceOf[BaseTable] =>
      Some(TableRef.Catalog((c.name() +: id.namespace().toSeq :+ id.name()).map(quoteIfNeeded).mkString(".")))
    case _ => None
  }

  private def quoteIfNeeded(part: String): String =
    if (part.matches("[A-Za-z_][A-Za-z0-9_]*")) part else "`" + part.replace("`", "``") + "`"

  /** A catalog table `ref` as an Iceberg table, from `analyzed`, the plan of `spark.table(name)`. */
  def resolve(spark: SparkSession, ref: TableRef, analyzed: Option[LogicalPlan]): Option[ResolvedTable] = ref match {
    case TableRef.Catalog(_) =>
      analyzed.flatMap(_.collectFirst { case r: DataSourceV2Relation if Lakehouse.isIcebergTable(r.table) => r }).flatMap { r =>
        val st = r.table.asInstanceOf[SparkTable]
        st.table() match {
          case table: BaseTable =>
            // The catalog may hand out a cached table: an index is built over the newest snapshot.
            table.refresh()
            val conf = spark.sessionState.newHadoopConf()
            val root = locationPath(table.location(), spark)
            val sparkSchema = org.apache.iceberg.spark.SparkSchemaUtil.convert(table.schema())
            val partitionSources = table.spec().fields().asScala
              .filter(f => f.transform().isIdentity).map(f => table.schema().findColumnName(f.sourceId())).toSeq
            Some(ResolvedTable(ref, root, sparkSchema, partitionSources,
              () => {
                table.refresh()
                Option(table.currentSnapshot()) match {
                  case None => TableListing(Nil, Some("Iceberg: no snapshot yet"))
                  case Some(snap) =>
                    val tasks = table.newScan().useSnapshot(snap.snapshotId()).planFiles()
                    val files = try tasks.asScala.map(t => DataFile(qualify(t.file().location(), conf), t.file().fileSizeInBytes(), 0L)).toSeq.distinct
                    finally tasks.close()
                    TableListing(files, Some(s"Iceberg snapshot ${snap.snapshotId()}"))
                }
              },
              fileColumn = f => (None, Option(table.schema().findField(f.name)).map(_.fieldId()))))
          case _ => None
        }
      }
    case _ => None
  }

  private def locationPath(location: String, spark: SparkSession): Path = {
    val p = new Path(location)
    p.getFileSystem(spark.sessionState.newHadoopConf()).makeQualified(p)
  }

  /**
   * A data file's location as the index keys it: qualified (a Hadoop catalog on the local file system records
   * bare absolute paths, `file:/...` once qualified).
   */
  def qualify(location: String, conf: org.apache.hadoop.conf.Configuration): String = {
    val p = new Path(location)
    if (p.toUri.getScheme != null) p.toString else p.getFileSystem(conf).makeQualified(p).toString
  }

  def rewrite(session: SparkSession, cond: SparkExpression, r: DataSourceV2Relation): Option[DataSourceV2Relation] = {
    val st = r.table.asInstanceOf[SparkTable]
    val table = st.table() match {
      case b: BaseTable => b
      case _ => return None // a metadata table, or a table someone else wrapped
    }
    // The schema the read binds names with (time travel reads the names the table had then); None: not swapped.
    val schema: Schema = IcebergTables.readSchema(table, st).getOrElse(return None)
    val caseSensitive = session.sessionState.conf.caseSensitiveAnalysis
    val ids: Map[ExprId, Int] = r.output.flatMap { a =>
      Option(if (caseSensitive) schema.findField(a.name) else schema.caseInsensitiveFindField(a.name)).map(f => a.exprId -> f.fieldId())
    }.toMap
    val root = locationPath(table.location(), session)
    BloomSkippingRule.indexesAt(session, root, cond,
      (id: ExprId, indexed: Seq[IndexedColumn]) =>
        ids.get(id).flatMap(fid => indexed.find(_.sameColumn("", Some(fid))).map(_.name))).flatMap { case (_, used) =>
      val opts = NativeFilters.options(session, Map.empty)
      val pruner = new IndexPruner(session, used, new RowGroupSelection(false), st.name(), opts.int96Probes)
      val conf = new sparkbloom.index.SerializableConf(session.sessionState.newHadoopConf())
      IcebergTables.swap(new PrunedIcebergTable(table, pruner, conf, IcebergTables.scanPin(st)), st).map(t => r.copy(table = t))
    }
  }
}

/**
 * An Iceberg table that is `delegate` in every way but one: its batch scans leave out the data-file tasks the
 * bloom indexes rule out. Not a `BaseTable`, so Iceberg pushes no aggregate into it (an aggregate answered
 * from manifests would not see the pruning), and its scan builder would plan it locally; so the scan is made
 * here as Iceberg would make it for `delegate`: its distributed scan when the session and table planning modes
 * allow one (Iceberg then reads large manifests on the executors).
 */
class PrunedIcebergTable(val delegate: BaseTable, val pruner: IndexPruner, conf: sparkbloom.index.SerializableConf,
    val pin: Option[Long] = None)
  extends Table with HasTableOperations with Serializable {

  /** The tasks of `tasks` that may hold matching rows (all of them after any error). */
  private[lakehouse] def prune(tasks: CloseableIterable[ScanTask]): CloseableIterable[ScanTask] = {
    val all = try tasks.asScala.toVector finally tasks.close()
    val data = all.zipWithIndex.collect { case (f: FileScanTask, i) => (f, i) }
    val keep = try {
      // One status per distinct data file (a file split into several tasks is decided once).
      val files = data.map(_._1.file()).map(f => (IcebergSupport.qualify(f.location(), conf.value), f.fileSizeInBytes())).distinct
      val statuses = files.map { case (p, size) => new FileStatus(size, false, 0, 0L, 0L, new Path(p)) }.toArray
      val kept = pruner.keep(statuses)
      val keptFiles = files.indices.filter(kept.get).map(files).toSet
      data.filterNot { case (f, _) => keptFiles.contains((IcebergSupport.qualify(f.file().location(), conf.value), f.file().fileSizeInBytes())) }
        .map(_._2).toSet
    } catch {
      case NonFatal(e) =>
        org.slf4j.LoggerFactory.getLogger(getClass)
          .warn(s"sparkbloom: reading every file Iceberg planned for ${pruner.tableName} after an error while pruning: $e")
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
      if (readConf.distributedPlanningEnabled()) new org.apache.iceberg.SparkDistributedDataScan(spark, delegate, readConf)
      else delegate.newBatchScan()
    } catch { case NonFatal(_) => delegate.newBatchScan() }

  override def name(): String = delegate.name()
  override def refresh(): Unit = delegate.refresh()
  override def newScan(): org.apache.iceberg.TableScan = delegate.newScan()
  override def newIncrementalAppendScan(): org.apache.iceberg.IncrementalAppendScan = delegate.newIncrementalAppendScan()
  override def newIncrementalChangelogScan(): org.apache.iceberg.IncrementalChangelogScan = delegate.newIncrementalChangelogScan()
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
  override def updatePartitionStatistics(): org.apache.iceberg.UpdatePartitionStatistics = delegate.updatePartitionStatistics()
  override def expireSnapshots(): org.apache.iceberg.ExpireSnapshots = delegate.expireSnapshots()
  override def manageSnapshots(): org.apache.iceberg.ManageSnapshots = delegate.manageSnapshots()
  override def newTransaction(): org.apache.iceberg.Transaction = delegate.newTransaction()
  override def io(): org.apache.iceberg.io.FileIO = delegate.io()
  override def encryption(): org.apache.iceberg.encryption.EncryptionManager = delegate.encryption()
  override def locationProvider(): org.apache.iceberg.io.LocationProvider = delegate.locationProvider()
  override def statisticsFiles(): java.util.List[org.apache.iceberg.StatisticsFile] = delegate.statisticsFiles()
  override def partitionStatisticsFiles(): java.util.List[org.apache.iceberg.PartitionStatisticsFile] = delegate.partitionStatisticsFiles()
  override def refs(): java.util.Map[String, org.apache.iceberg.SnapshotRef] = delegate.refs()
  override def uuid(): java.util.UUID = delegate.uuid()
  override def operations(): TableOperations = delegate.operations()
  override def toString: String = delegate.toString
}

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
  override def includeColumnStats(cols: java.util.Collection[String]): BatchScan = wrap(delegate.includeColumnStats(cols))
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
