package sparkbloom.formats.iceberg

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.iceberg.{BaseTable, Schema}
import org.apache.iceberg.events.{CreateSnapshotEvent, Listener, Listeners}
import org.apache.iceberg.spark.source.SparkTable
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, RowLevelWrite, V2WriteCommand}
import org.apache.spark.sql.connector.catalog.{Table => SparkCatalogTable}
import org.apache.spark.sql.connector.write.{SupportsDelta, WriterCommitMessage}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.datasources.v2.{BatchScanExec, DataSourceV2Relation, DataSourceV2ScanRelation}
import org.slf4j.LoggerFactory

import sparkbloom.index.{
  DataFile, IndexDiscovery, IndexPruner, IndexVersion, IndexedColumn, KeySetPruner, KeySource, ResolvedTable,
  RowGroupSelection, SerializableConf, TableChanges, TableFormat, TableListing, TableRef
}
import sparkbloom.predicate.Conditions
import sparkbloom.scan.NativeFilters

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
object IcebergFormat extends TableFormat {
  private val log = LoggerFactory.getLogger(getClass)

  override def name: String = "iceberg"

  /** Exactly Iceberg's Spark table (not a table sparkbloom already wrapped, nor a metadata table's class). */
  private def isIcebergTable(t: SparkCatalogTable): Boolean =
    t.getClass.getName == "org.apache.iceberg.spark.source.SparkTable"

  /** The catalogs Iceberg's procedures stage file groups in: 1.10's, 1.11's. */
  private val StagingCatalogs =
    Set("org.apache.iceberg.spark.SparkCachedTableCatalog", "org.apache.iceberg.spark.SparkRewriteTableCatalog")

  override def tableOf(leaf: LogicalPlan): Option[TableRef] = leaf match {
    case r: DataSourceV2Relation if isIcebergTable(r.table) =>
      (r.catalog, r.identifier) match {
        // not the file groups Iceberg's procedures stage in their own catalog (rewrite_data_files reads and writes
        // them as `default_cache_iceberg`.`<id>#rewrite` in 1.10): the table they commit to is told of by a lookup
        case (Some(c), _) if StagingCatalogs(c.getClass.getName) => None
        case (Some(c), Some(id)) if r.table.asInstanceOf[SparkTable].table().isInstanceOf[BaseTable] =>
          Some(TableRef.Catalog.of(c.name() +: id.namespace().toSeq :+ id.name()))
        case _ => None
      }
    case _ => None
  }

  /**
   * The Iceberg tables a V2 write commits to: appends and overwrites (`INSERT`, `df.writeTo`), and the rewrites of
   * MERGE, UPDATE and DELETE, copy-on-write (`ReplaceData`) or merge-on-read (`WriteDelta`).
   */
  override def writtenBy(session: SparkSession, write: LogicalPlan): Seq[TableFormat.Written] = write match {
    case w: V2WriteCommand =>
      val relations = w.table +: (w match { case r: RowLevelWrite => Seq(r.originalTable); case _ => Nil })
      // a row-level write's `table` is Spark's operation table over the Iceberg one, its `originalTable` the latter
      // a write to a branch other than main leaves the main snapshot the index covers as it was
      relations.collect { case r: DataSourceV2Relation => r }.filter { r =>
        !isIcebergTable(r.table) || Option(r.table.asInstanceOf[SparkTable].branch()).forall(_ == "main")
      }.flatMap { r =>
        tableOf(r).map(ref =>
          TableFormat.Written(locationPath(r.table.asInstanceOf[SparkTable].table().location(), session), ref))
      }.distinct
    case _ => Nil
  }

  /**
   * Iceberg's commits that no plan marks as a write: compaction and the other rewrites (`replace` snapshots, such as
   * `rewrite_data_files` makes; on Spark 4 a procedure runs while its statement is analysed) and the streaming
   * sink's micro-batches (their snapshots carry the query's id). Heard of through Iceberg's own commit events
   * (`Listeners`, one registration per JVM; Iceberg catches and logs what a listener throws). Writes a plan marks
   * are maintained by that plan, and are not told twice.
   */
  override def watchCommits(onCommit: TableFormat.Commit => Unit): Unit =
    Listeners.register(
      new Listener[CreateSnapshotEvent] {
        override def notify(e: CreateSnapshotEvent): Unit = committed(e).foreach(onCommit)
      },
      classOf[CreateSnapshotEvent])

  /** The commit `e` reports, when no plan marks it; None for a table without a catalog name (a path table). */
  private def committed(e: CreateSnapshotEvent): Option[TableFormat.Commit] = {
    val streaming = Option(e.summary()).exists(_.containsKey("spark.sql.streaming.queryId"))
    val name = Option(e.tableName()).getOrElse("")
    if ((e.operation() != "replace" && !streaming) || name.isEmpty || name.contains("/")) None
    else Some(TableFormat.Commit(TableRef.Catalog(name),
      if (streaming) "a streaming batch committed" else s"Iceberg committed a ${e.operation()} snapshot", streaming))
  }

  /** A catalog table `ref` as an Iceberg table, from `analyzed`, the plan of `spark.table(name)`. */
  override def resolve(spark: SparkSession, ref: TableRef, analyzed: () => Option[LogicalPlan],
                       refresh: Boolean): Option[ResolvedTable] = ref match {
    case TableRef.Catalog(_) =>
      analyzed().flatMap(_.collectFirst { case r: DataSourceV2Relation if isIcebergTable(r.table) => r }).flatMap { r =>
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
                    val files = try tasks.asScala.map(t =>
                        DataFile(qualify(t.file().location(), conf), t.file().fileSizeInBytes(), 0L)).toSeq.distinct
                    finally tasks.close()
                    TableListing(files, Some(s"Iceberg snapshot ${snap.snapshotId()}"))
                }
              },
              fileColumn = f => (None, Option(table.schema().findField(f.name)).map(_.fieldId())),
              changesSince = since => changesSince(table, conf, since)))
          case _ => None
        }
      }
    case _ => None
  }

  private val TaskCommitClass = "org.apache.iceberg.spark.source.SparkWrite$TaskCommit"

  override def appendsIndexedInTask: Boolean = true

  /**
   * The data files of Iceberg's task commit message (`SparkWrite.TaskCommit`, whose `files()` is package-private:
   * read by reflection, None on any failure), qualified as the listing qualifies them, with their record counts.
   */
  override def filesWritten(message: WriterCommitMessage, conf: org.apache.hadoop.conf.Configuration)
      : Option[Seq[(String, Long)]] =
    if (message == null || message.getClass.getName != TaskCommitClass) None
    else
      try {
        val files = message.getClass.getDeclaredMethod("files")
        files.setAccessible(true)
        Some(files.invoke(message).asInstanceOf[Array[org.apache.iceberg.DataFile]].toSeq.map(f =>
            (qualify(f.location(), conf), f.recordCount())))
      } catch { case NonFatal(_) | _: LinkageError => None }

  private val SnapshotListed = """Iceberg snapshot (-?\d+)""".r

  /** Snapshots read back from the current one at most, looking for the one an index covers. */
  val MaxSnapshotsRead = 100

  /**
   * The data files the snapshots after `since` (one of this table's snapshots, as a listing names it) added and
   * removed, from the manifests each of them wrote: an append reads one manifest, not the table's. None when
   * `since` is not an ancestor of the current snapshot within [[MaxSnapshotsRead]] (a rollback, an expired
   * snapshot, a table made again).
   */
  private def changesSince(table: BaseTable, conf: org.apache.hadoop.conf.Configuration,
                           since: String): Option[TableChanges] = since match {
    case SnapshotListed(id) =>
      table.refresh()
      val target = id.toLong
      val current = table.currentSnapshot()
      var after = List.empty[org.apache.iceberg.Snapshot] // the snapshots after `target`, oldest first
      var s = current
      while (s != null && s.snapshotId() != target && after.size <= MaxSnapshotsRead) {
        after = s :: after
        s = Option(s.parentId()).map(p => table.snapshot(p.longValue())).orNull
      }
      if (s == null || s.snapshotId() != target) None
      else {
        Some(TableChanges.of(after.iterator.map { snap =>
            (snap.addedDataFiles(table.io()).asScala.map(f =>
                DataFile(qualify(f.location(), conf), f.fileSizeInBytes(), 0L)).toSeq,
              snap.removedDataFiles(table.io()).asScala.map(f => qualify(f.location(), conf)).toSeq)
          }, s"Iceberg snapshot ${current.snapshotId()}"))
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

  /**
   * A Filter over an Iceberg table: the table is swapped for one whose scans drop the files the indexes rule out.
   * Never in a plan that rewrites rows; after any error the scan is left to Iceberg.
   */
  override def rewrite(session: SparkSession, phase: TableFormat.Phase, filter: Filter,
                       plan: LogicalPlan): Option[LogicalPlan] = filter match {
    case f @ Filter(cond, r: DataSourceV2Relation)
        if phase == TableFormat.Optimizer && isIcebergTable(r.table) &&
          !rewritesRows(plan) =>
      try rewrite(session, Conditions.pushable(cond), r).map(n => f.copy(child = n))
      catch {
        case NonFatal(e) =>
          log.warn(s"sparkbloom: Iceberg scan of ${r.table.name()} left as it was after an error: $e"); None
      }
    case _ => None
  }

  /**
   * Key-set pruning (joins, `IN (subquery)`, `EXISTS`): the scan unchanged when an index covers `attr` (the run-time
   * filter is planted above it and bound physically, [[keySetPhysical]]). Not for a partition source column
   * (Spark's dynamic partition pruning has it).
   *
   * MERGE, UPDATE and DELETE: a merge-on-read operation reads the target through Spark's row-level operation table,
   * with Iceberg's batch scan, and writes deletes for the rows it matched: the files without a key hold no such row,
   * so that read is pruned like any other (the rule plants only where unmatched target rows are dropped). A
   * copy-on-write operation's own read is left alone: it must read whole every file it rewrites, and Spark narrows
   * it to those files by its group filter, a query over Iceberg's table that is pruned as a join.
   */
  override def keySetScan(session: SparkSession, leaf: LogicalPlan, attr: Attribute, nullFor: Option[Any],
                          label: String): Option[LogicalPlan] = leaf match {
    // before Spark builds the V2 scan (pre-CBO rules run before V2 push-down), or after
    case r: DataSourceV2Relation =>
      keySetTable(r.table).flatMap(st => keySetIndexes(session, st, attr)).map(_ => r)
    case s: DataSourceV2ScanRelation if KeySetIcebergScan.supports(s.scan) =>
      keySetTable(s.relation.table).flatMap(st => keySetIndexes(session, st, attr)).map(_ => s)
    case _ => None
  }

  /** The Iceberg table a key-set pruned scan reads: Iceberg's own, or the target of a merge-on-read operation. */
  private def keySetTable(t: SparkCatalogTable): Option[SparkTable] = t match {
    case st: SparkTable if isIcebergTable(st) => Some(st)
    case op if op.getClass.getName == OperationTable =>
      // Spark's `RowLevelOperationTable(table, operation)` is private to Spark's packages: read by its accessors
      try {
        val operation = op.getClass.getMethod("operation").invoke(op)
        op.getClass.getMethod("table").invoke(op) match {
          case st: SparkTable if operation.isInstanceOf[SupportsDelta] && isIcebergTable(st) => Some(st)
          case _ => None
        }
      } catch { case NonFatal(_) | _: LinkageError => None }
    case _ => None
  }
  private val OperationTable = "org.apache.spark.sql.connector.write.RowLevelOperationTable"

  /** The indexes covering `attr` of Iceberg table `st` (by field id), or None. */
  private def keySetIndexes(session: SparkSession, st: SparkTable,
                            attr: Attribute): Option[Seq[(IndexVersion, String)]] = st.table() match {
    case table: BaseTable =>
      val schema = IcebergTables.readSchema(table, st).getOrElse(return None)
      val field = Option(
        if (session.sessionState.conf.caseSensitiveAnalysis) schema.findField(attr.name)
        else schema.caseInsensitiveFindField(attr.name)).getOrElse(return None)
      if (table.spec().fields().asScala.exists(_.sourceId() == field.fieldId())) return None
      val root = locationPath(table.location(), session)
      Some(IndexDiscovery.indexesOf(session, root, attr,
        (id: ExprId, indexed: Seq[IndexedColumn]) =>
          if (id != attr.exprId) None
          else indexed.find(_.sameColumn("", Some(field.fieldId()))).map(_.name))).filter(_.nonEmpty)
    case _ => None
  }

  /** The physical half: Iceberg's batch scan, its tasks chosen by `keys` when it runs ([[KeySetIcebergScan]]). */
  override def keySetPhysical(session: SparkSession, scan: SparkPlan, attr: Attribute, nullFor: Option[Any],
                              keys: KeySource): Option[SparkPlan] = scan match {
    case b: BatchScanExec if KeySetIcebergScan.supports(b.scan) =>
      for (st <- keySetTable(b.table); cols <- keySetIndexes(session, st, attr)) yield {
        val keySet = new KeySetPruner(session, cols, attr.exprId, attr.dataType, nullFor, new RowGroupSelection(false),
          st.name(), int96Probes = false, keys.label(attr.name), Some(keys))
        val conf = new SerializableConf(session.sessionState.newHadoopConf())
        b.copy(scan = new KeySetIcebergScan(b.scan, keySet, conf))
      }
    case _ => None
  }

  /**
   * MERGE / UPDATE / DELETE and their rewritten forms: their reads decide which rows and files get rewritten,
   * so they are never touched, whatever they read.
   */
  private val RowLevelNodes = Set("MergeIntoTable", "UpdateTable", "DeleteFromTable", "ReplaceData", "WriteDelta",
    "MergeRows", "UpdateRows", "RowLevelWrite")
  private def rewritesRows(plan: LogicalPlan): Boolean =
    plan.exists(p =>
      RowLevelNodes.contains(p.getClass.getSimpleName) ||
        p.isInstanceOf[org.apache.spark.sql.catalyst.plans.logical.RowLevelWrite])

  private def rewrite(session: SparkSession, cond: Expression, r: DataSourceV2Relation)
      : Option[DataSourceV2Relation] = {
    val st = r.table.asInstanceOf[SparkTable]
    val table = st.table() match {
      case b: BaseTable => b
      case _ => return None // a metadata table, or a table someone else wrapped
    }
    // The schema the read binds names with (time travel reads the names the table had then); None: not swapped.
    val schema: Schema = IcebergTables.readSchema(table, st).getOrElse(return None)
    val caseSensitive = session.sessionState.conf.caseSensitiveAnalysis
    val ids: Map[ExprId, Int] = r.output.flatMap { a =>
      Option(if (caseSensitive) schema.findField(a.name) else schema.caseInsensitiveFindField(a.name)).map(f =>
        a.exprId -> f.fieldId())
    }.toMap
    val root = locationPath(table.location(), session)
    IndexDiscovery.indexesAt(session, root, cond,
      (id: ExprId, indexed: Seq[IndexedColumn]) =>
        ids.get(id).flatMap(fid => indexed.find(_.sameColumn("", Some(fid))).map(_.name))).flatMap { case (_, used) =>
      val opts = NativeFilters.options(session, Map.empty)
      val pruner = new IndexPruner(session, used, new RowGroupSelection(false), st.name(), opts.int96Probes)
      val conf = new SerializableConf(session.sessionState.newHadoopConf())
      IcebergTables.swap(new PrunedIcebergTable(table, pruner, conf, IcebergTables.scanPin(st)), st).map(t =>
        r.copy(table = t))
    }
  }
}
