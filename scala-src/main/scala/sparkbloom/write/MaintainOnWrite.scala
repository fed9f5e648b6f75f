package sparkbloom.write

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.SparkContext
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.{SaveMode, SparkSession}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, V2WriteCommand}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.command.{DataWritingCommandExec, ExecutedCommandExec}
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.datasources.v2.AppendDataExec
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.util.CollectionAccumulator

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.formats.TableFormats
import sparkbloom.index.{
  IndexDescription, IndexManager, IndexStore, IndexVersion, ScanSkipping, SerializableConf, SkippingLog, TableFormat,
  TableRef, WriteIndexer
}
import sparkbloom.index.sliced.EntryMeta
import sparkbloom.shims.DelegatingWriteCommand

/**
 * Maintenance on write: Spark's own write of Parquet files into a table (`INSERT INTO` / `INSERT OVERWRITE`,
 * `df.write` to a path or a catalog table, partitioned or not) brings the table's bloom indexes up to date before the
 * write returns, so its files are covered from the first lookup after it. The write itself is Spark's, unchanged:
 * the command runs as it would, then each index on the table gets an incremental refresh (the new files' filters are
 * harvested from their footers, or built from their indexed columns; files gone from the table are dropped).
 *
 * An index update that fails is logged and leaves the index as it was, its new files merely uncovered (read by every
 * lookup until the next write or `REFRESH BLOOM INDEX`): a failure to index never fails the user's write. On with
 * `spark.sparkbloom.maintainOnWrite.enabled` (on by default, see docs/maintenance-on-write.md). An
 * overwrite that deletes the table's directory, its indexes with it, gets them made again, with the same columns and
 * options, over the files it wrote.
 */
final case class IndexMaintainingWrite(inner: InsertIntoHadoopFsRelationCommand,
                                       byTasks: Option[MaintainOnWrite.IndexedByTasks] = None)
  extends DelegatingWriteCommand {
  override def query: LogicalPlan = inner.query
  override def outputColumnNames: Seq[String] = inner.outputColumnNames
  override lazy val metrics: Map[String, SQLMetric] = inner.metrics

  /** An overwrite may delete the table's directory, its indexes with it: their definitions, to make them again. */
  @transient private var definitions: Seq[IndexDescription] = Nil

  override protected def beforeRun(session: SparkSession): Unit =
    definitions = if (inner.mode == SaveMode.Overwrite) MaintainOnWrite.definitions(session, inner) else Nil

  override protected def afterRun(session: SparkSession): Unit = byTasks match {
    case Some(b) => MaintainOnWrite.commitIndexedByTasks(session, inner, b)
    case None => MaintainOnWrite.afterWrite(session, inner, definitions)
  }

  override protected def withNewChildInternal(newChild: LogicalPlan): IndexMaintainingWrite =
    copy(inner = inner.withNewChildren(Seq(newChild)).asInstanceOf[InsertIntoHadoopFsRelationCommand])
}

/**
 * A write into a Delta or Iceberg table (an append, an overwrite, MERGE, UPDATE, DELETE, Delta's OPTIMIZE), run as
 * the table format plans it, then each bloom index on the tables it committed to refreshed incrementally before the
 * write returns: the new files are indexed (the files' own filters harvested, or their indexed columns read) and
 * the files the commit removed are dropped. A failed write fails as it would have; a failed refresh is logged and
 * leaves the index as it was, the new files merely uncovered (never a failed write).
 */
final case class IndexMaintainingTableWrite(child: SparkPlan, written: Seq[TableFormat.Written],
                                            byTasks: Option[MaintainOnWrite.V2IndexedByTasks] = None)
  extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def nodeName: String = "MaintainBloomIndexes"
  override def simpleString(maxFields: Int): String =
    s"$nodeName [${written.map(_.table.display).mkString(", ")}]${if (byTasks.isDefined) " in write tasks" else ""}"

  private def maintained[T](result: T): T = {
    val s = Option[SparkSession](session).getOrElse(SparkSession.active)
    byTasks match {
      case Some(b) => MaintainOnWrite.commitV2IndexedByTasks(s, written.head, b)
      case None => MaintainOnWrite.afterTableWrite(s, written)
    }
    result
  }
  override def executeCollect(): Array[InternalRow] = maintained(child.executeCollect())
  override protected def doExecute(): RDD[InternalRow] = maintained(child.execute())
  override protected def withNewChildInternal(newChild: SparkPlan): IndexMaintainingTableWrite =
    copy(child = newChild)
}

object MaintainOnWrite extends Logging {
  /** The physical rule: Parquet writes into a table that has bloom indexes run through [[IndexMaintainingWrite]]. */
  final class WrapRule(session: SparkSession) extends ColumnarRule {
    override def preColumnarTransitions: Rule[SparkPlan] = (plan: SparkPlan) => {
      BackgroundMaintenance.register(session)
      BackgroundMaintenance.beforeStreamingPlan(session)
      plan match {
        case w @ DataWritingCommandExec(cmd: InsertIntoHadoopFsRelationCommand, _) if applies(session, cmd) =>
          indexedByTasks(session, cmd) match {
            case Some((indexing, b)) => w.copy(cmd = IndexMaintainingWrite(indexing, Some(b)))
            case None => w.copy(cmd = IndexMaintainingWrite(withNativeFilters(session, cmd)))
          }
        case e: ExecutedCommandExec => maintaining(e, e.cmd)
        case a: AppendDataExec if a.logicalLink.exists(_.isInstanceOf[V2WriteCommand]) =>
          indexedByV2Tasks(session, a).getOrElse(maintaining(a, a.logicalLink.get))
        case p if p.logicalLink.exists(_.isInstanceOf[V2WriteCommand]) => maintaining(p, p.logicalLink.get)
        case other => other
      }
    }

    /** `plan`, planned from `write`, wrapped when it commits to a Delta or Iceberg table that has indexes. */
    private def maintaining(plan: SparkPlan, write: LogicalPlan): SparkPlan = {
      val written = tablesWritten(session, write)
      if (written.isEmpty) plan else IndexMaintainingTableWrite(plan, written)
    }
  }

  /**
   * The tables of a format other than plain Parquet (Delta, Iceberg) that `write` commits to and whose writes
   * maintain an index. Reads only their index directories and newest commits. Never throws (none, on any error).
   */
  def tablesWritten(session: SparkSession, write: LogicalPlan): Seq[TableFormat.Written] =
    try {
      if (!BloomConf.maintainOnWrite(session)) Nil
      else
        TableFormats.all.flatMap(_.writtenBy(session, write)).distinct.filter(w => indexNames(session, w.root).nonEmpty)
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: cannot tell which indexed tables ${write.nodeName} writes; not maintained", e); Nil
    }

  /**
   * After a Delta or Iceberg write committed: each maintained index on the tables it wrote gets an incremental
   * refresh (then an OPTIMIZE once fragmented, as after Parquet writes), from the commits since the version it
   * covers (`fromLog`; [[IndexManager.update]]), or from the table listed whole (a catch-up after a lookup read files
   * it did not cover). Never throws; false when an index could not be listed or refreshed.
   */
  def afterTableWrite(session: SparkSession, written: Seq[TableFormat.Written], fromLog: Boolean = true): Boolean =
    written.map { w =>
      val names = try Some(indexNames(session, w.root))
      catch { case NonFatal(e) => logWarning(s"sparkbloom: cannot list the bloom indexes of ${w.table}", e); None }
      lazy val resolved = BloomIndexes.resolve(session, w.table, refresh = true)
      names.exists(_.map { name =>
        val updated = updateOrMark(session, w.root, w.table.display, name)(
          IndexManager.update(session, resolved, name, full = false, fromLog = fromLog))
        optimizeIfFragmented(session, w.table,
          new Path(IndexStore.indexesDir(w.root, BloomConf.indexRoot(session)), name))
        updated
      }.forall(identity))
    }.forall(identity)

  /**
   * `update` of index `name` of the table at `root` after its write committed; on any error the index is marked for
   * a refresh by the next write (`_needs_refresh`) and the error logged. Never throws; false after an error.
   */
  private def updateOrMark(session: SparkSession, root: Path, table: String, name: String)(update: => Unit): Boolean =
    try { update; true }
    catch {
      case NonFatal(e) =>
        IndexManager.markNeedsRefresh(session,
          new Path(IndexStore.indexesDir(root, BloomConf.indexRoot(session)), name))
        logWarning(
          s"sparkbloom: the write into $table committed, but bloom index $name could not take its new " +
            "files (they are read by every lookup until the next write or REFRESH BLOOM INDEX)", e)
        false
    }

  /** A Parquet write into a table with at least one bloom index, maintenance on. Never throws. */
  def applies(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand): Boolean =
    try BloomConf.maintainOnWrite(session) && cmd.fileFormat.isInstanceOf[ParquetFileFormat] &&
        indexNames(session, cmd.outputPath).nonEmpty
    catch { case NonFatal(_) => false }

  /**
   * The write with parquet-java writing a bloom filter for each indexed column into every row group it writes
   * (`spark.sparkbloom.maintainOnWrite.nativeFilters`, on by default): the refresh after the write then takes them by
   * a harvest (footers and filter pages) instead of reading the new files' columns again. Each filter is sized for
   * the rows of the table's row groups so far (their 90th percentile, +10%; `parquet.bloom.filter.expected.ndv`,
   * capped by `parquet.bloom.filter.max.bytes`), or, for an index over no rows yet, for the row group's actual
   * distinct count (`parquet.bloom.filter.adaptive.enabled`: five candidate filters, costlier), at the FPP the
   * index's budget gives a row group of a table twice its size now (or the index's explicit `fpp`). A row group with
   * more distinct values gets a fuller filter, whose FPP the harvest measures from its bits. Options the user set
   * for the write, or in the session, are kept. Never throws (the write unchanged, on any error).
   */
  def withNativeFilters(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand)
      : InsertIntoHadoopFsRelationCommand =
    try {
      if (!BloomConf.maintainWithNativeFilters(session)) cmd
      else {
        val hadoop = session.sessionState.newHadoopConfWithOptions(cmd.options)
        val dir = IndexStore.indexesDir(cmd.outputPath, BloomConf.indexRoot(session))
        val fs = dir.getFileSystem(hadoop)
        val metas = indexNames(session, cmd.outputPath).flatMap(n => IndexStore.latestMeta(fs, new Path(dir, n))._1)
        // Row groups are sized for the distinct count of the table's row groups so far (the 90th percentile of their
        // rows: exact for unique keys), which parquet-java cannot learn until a row group is written.
        val rowsPerRowGroup = metas.headOption.map { m =>
          val rows = IndexStore.load(fs, hadoop, new Path(dir, m.name), m).layout.rgRows.filter(_ > 0).sorted
          if (rows.isEmpty) 0L else rows(math.min(rows.length - 1, (rows.length * 0.9).toInt))
        }.getOrElse(0L)
        val output = cmd.query.output.map(_.name)
        val opts = for {
          m <- metas; c <- m.columns
          col <- output.find(_.equalsIgnoreCase(c.fileName.getOrElse(c.name))).toSeq
        } yield {
          val fpp = c.fpp.orElse(m.fpp).getOrElse {
            val budget = c.falseReadsPerKey.orElse(m.falseReadsPerKey).getOrElse(BloomConf.DefaultFalseReadsPerKey)
            budget / math.max(1000L, 2L * m.rowGroups)
          }
          col -> math.min(0.1, math.max(fpp, 1e-5))
        }
        // the strongest FPP any index asks of a column
        val perColumn = opts.groupBy(_._1).map { case (col, fs) => col -> fs.map(_._2).min }
        val set = perColumn.toSeq.flatMap { case (col, fpp) =>
          Seq(s"parquet.bloom.filter.enabled#$col" -> "true", s"parquet.bloom.filter.fpp#$col" -> fpp.toString) ++
            (if (rowsPerRowGroup > 0)
               Seq(s"parquet.bloom.filter.expected.ndv#$col" -> math.max(1000L, rowsPerRowGroup * 11 / 10).toString)
             else Nil)
        } ++ (if (rowsPerRowGroup > 0) Nil else Seq("parquet.bloom.filter.adaptive.enabled" -> "true"))
        val added = set.filter { case (k, _) => hadoop.get(k) == null && !cmd.options.contains(k) }
        if (perColumn.isEmpty) cmd else cmd.copy(options = cmd.options ++ added)
      }
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: writing ${cmd.outputPath} without native bloom filters", e); cmd
    }

  /** A write whose tasks index what they write: each index's plan, and what the tasks report. */
  final case class IndexedByTasks(plans: Seq[WriteIndexer.Plan], written: CollectionAccumulator[WriteIndexer.Part])

  /**
   * The write with its tasks indexing the files they write ([[IndexingParquetFileFormat]]), when that can cover
   * them (`spark.sparkbloom.maintainOnWrite.inTask`, on by default): an append, not into custom partition
   * locations, every index of the table readable in the current format and every indexed column written as a
   * type the tasks hash (bigint, int, smallint, tinyint, string, binary), not a partition column. Otherwise None
   * (the files' own filters are written and harvested after the write, [[withNativeFilters]]). Never throws.
   */
  def indexedByTasks(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand)
      : Option[(InsertIntoHadoopFsRelationCommand, IndexedByTasks)] =
    try {
      if (!BloomConf.maintainInTask(session) || cmd.mode != SaveMode.Append ||
        // partitions the catalog tracks may have locations of their own
        cmd.catalogTable.exists(t => t.partitionColumnNames.nonEmpty && t.tracksPartitionsInCatalog) ||
        !cmd.fileFormat.getClass.equals(classOf[ParquetFileFormat])) return None
      val plans = taskPlans(session, cmd.outputPath, indexNames(session, cmd.outputPath)).getOrElse(return None)
      val partitions = cmd.partitionColumns.map(_.name.toLowerCase(java.util.Locale.ROOT)).toSet
      val types = cmd.query.output.map(a => a.name.toLowerCase(java.util.Locale.ROOT) -> a.dataType).toMap
      val covered = plans.forall(_.columns.forall { c =>
        val n = c.name.toLowerCase(java.util.Locale.ROOT)
        c.fileName.isEmpty && c.fieldId.isEmpty && !partitions.contains(n) &&
        types.get(n).exists(t => WriteIndexer.physicalType(t).isDefined)
      })
      if (!covered) return None
      val b = reportedBy(session, plans)
      Some((cmd.copy(fileFormat = new IndexingParquetFileFormat(b.plans, b.written)), b))
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: ${cmd.outputPath} is indexed after its write, not by its tasks", e)
        None
    }

  /**
   * The write plans of the indexes `names` of the table at `root`, when there is one and every one of them can be
   * written by a write's tasks (readable in the current format); None otherwise.
   */
  private def taskPlans(session: SparkSession, root: Path, names: Seq[String]): Option[Seq[WriteIndexer.Plan]] = {
    val dir = IndexStore.indexesDir(root, BloomConf.indexRoot(session))
    val plans = names.map(n => IndexManager.writePlan(session, new Path(dir, n)))
    if (plans.isEmpty || plans.exists(_.isEmpty)) None else Some(plans.flatten)
  }

  /** `plans` with the accumulator the write's tasks report their files' entries to. */
  private def reportedBy(session: SparkSession, plans: Seq[WriteIndexer.Plan]): IndexedByTasks = {
    val written = new CollectionAccumulator[WriteIndexer.Part]()
    session.sparkContext.register(written, "sparkbloom.written")
    IndexedByTasks(plans, written)
  }

  /** A V2 append whose tasks index what they write: the wrapped write, and what its tasks report. */
  final case class V2IndexedByTasks(write: IndexingV2Write, tasks: IndexedByTasks)

  /**
   * A V2 append (`AppendData`) into a table whose format indexes its appends in their tasks (Iceberg;
   * [[TableFormat.appendsIndexedInTask]]), wrapped so that its tasks do ([[IndexingV2Write]]), when
   * `spark.sparkbloom.maintainOnWrite.inTask` is on, the append writes one table with maintained indexes, every
   * index of it is readable in the current format, and every indexed column is written as a type the tasks hash.
   * Otherwise None (maintained by a refresh after the commit). Never throws.
   */
  def indexedByV2Tasks(session: SparkSession, a: AppendDataExec): Option[SparkPlan] =
    try {
      if (!BloomConf.maintainOnWrite(session) || !BloomConf.maintainInTask(session)) return None
      val logical = a.logicalLink.get
      // One table, of a format whose appends are indexed in their tasks: its indexes are listed once, here.
      val (format, written) = TableFormats.all.filter(_.appendsIndexedInTask)
        .flatMap(f => f.writtenBy(session, logical).distinct.map(f -> _)) match {
        case Seq(one) => one
        case _ => return None
      }
      val plans = taskPlans(session, written.root, indexNames(session, written.root)).getOrElse(return None)
      val output = a.query.output
      val columns = plans.flatMap(_.columns).map(_.name.toLowerCase(java.util.Locale.ROOT)).distinct.map { n =>
        val i = output.indexWhere(_.name.toLowerCase(java.util.Locale.ROOT) == n)
        if (i < 0 || WriteIndexer.physicalType(output(i).dataType).isEmpty) return None
        n -> (i, output(i).dataType)
      }.toMap
      val tasks = reportedBy(session, plans)
      val write = new IndexingV2Write(a.write, format, tasks.plans, columns, tasks.written,
        new SerializableConf(session.sessionState.newHadoopConf()))
      val wrapped = a.copy(write = write)
      wrapped.setLogicalLink(logical) // EXPLAIN and the SQL tab show it as the write it is
      Some(IndexMaintainingTableWrite(wrapped, Seq(written), Some(V2IndexedByTasks(write, tasks))))
    } catch {
      case NonFatal(e) => logWarning("sparkbloom: a V2 append is indexed after its commit, not by its tasks", e); None
    }

  /**
   * After a V2 append whose tasks indexed it: when every file the commit added was indexed by its task for every
   * index, each index takes the entries on top of its newest version (the table is neither listed nor read);
   * otherwise, or when an index cannot take them, the table's indexes get the refresh of [[afterTableWrite]].
   * Never throws.
   */
  def commitV2IndexedByTasks(session: SparkSession, w: TableFormat.Written, b: V2IndexedByTasks): Unit = {
    import scala.jdk.CollectionConverters._
    val parts = b.tasks.written.value.asScala.toSeq
    val committed = b.write.committed
    val complete = committed.isDefined && parts.forall(_.indexDir.nonEmpty) && b.tasks.plans.forall { plan =>
      val mine = parts.filter(_.indexDir == plan.indexDir)
      mine.forall(_.failed.isEmpty) && mine.flatMap(_.files).sorted == committed.get.sorted
    }
    // The table version after the write is recorded as covered when its changes since the version the index covered
    // are all in the new version (no other writer committed in between): DESCRIBE then shows it, and the next
    // maintenance reads the log from there.
    lazy val resolved = BloomIndexes.resolve(session, w.table, refresh = true)
    val coveredAfter = (before: String, covered: String => Boolean) =>
      resolved.changesSince(before).filter { c =>
        val added = c.added.iterator.map(_.path).toSet
        added.forall(covered) && c.removed.forall(p => added.contains(p) || !covered(p))
      }.map(_.snapshot)
    val taken = complete && b.tasks.plans.forall(plan =>
      try {
        commitTaskParts(session, plan, parts.filter(_.indexDir == plan.indexDir), identity, coveredAfter); true
      } catch {
        case NonFatal(e) =>
          logWarning(
            s"sparkbloom: bloom index ${new Path(plan.indexDir).getName} could not take the entries the " +
              s"write into ${w.table.display} built; refreshing it instead", e)
          false
      })
    if (!taken) { afterTableWrite(session, Seq(w)); () }
    else b.tasks.plans.foreach(p => optimizeIfFragmented(session, w.table, new Path(p.indexDir)))
  }

  /**
   * Commits the entries one index's write tasks built (`mine`), and the filters they shipped, stored now, on top of
   * its newest version; `finalEntry` maps an entry from where its task saw its file to where the table has it.
   * Throws when it cannot.
   */
  private def commitTaskParts(session: SparkSession, plan: WriteIndexer.Plan, mine: Seq[WriteIndexer.Part],
                              finalEntry: EntryMeta => EntryMeta,
                              coveredAfter: (String, String => Boolean) => Option[String] = (_, _) => None): Unit = {
    val (shippedEntries, shippedSegments, shippedSummaries) =
      if (mine.forall(_.shipped.isEmpty)) (Nil, Nil, Nil)
      else WriteIndexer.storeShipped(plan, session.sessionState.newHadoopConf(), mine.flatMap(_.shipped))
    val entries = (mine.flatMap(_.entries) ++ shippedEntries).map(finalEntry)
    if (entries.nonEmpty)
      IndexManager.commitWritten(session, new Path(plan.indexDir), plan.dataDirName, entries,
        mine.flatMap(_.segments) ++ shippedSegments, mine.flatMap(_.summaries) ++ shippedSummaries, coveredAfter)
  }

  /**
   * After a write whose tasks indexed it: each index takes the entries its tasks built, their files mapped from
   * where the tasks wrote them to where the commit put them (the same partition directories and name under the
   * table), on top of its newest version. An index whose tasks did not report every file the write made, or whose
   * commit fails, gets the incremental refresh of [[afterWrite]] instead. Never throws.
   */
  def commitIndexedByTasks(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand, b: IndexedByTasks): Unit = {
    import scala.jdk.CollectionConverters._
    val parts = b.written.value.asScala.toSeq
    val numFiles = cmd.metrics.get("numFiles").map(_.value)
    val fs = cmd.outputPath.getFileSystem(session.sessionState.newHadoopConfWithOptions(cmd.options))
    val depth = cmd.partitionColumns.size + 1
    lazy val finals: Map[String, org.apache.hadoop.fs.FileStatus] = parts.flatMap(_.files).distinct.map { p =>
      val rel = new Path(p).toUri.getPath.split('/').filter(_.nonEmpty).takeRight(depth).mkString("/")
      p -> fs.getFileStatus(new Path(cmd.outputPath, rel))
    }.toMap
    val fallback = b.plans.filterNot { plan =>
      val mine = parts.filter(_.indexDir == plan.indexDir)
      val complete = mine.forall(_.failed.isEmpty) && parts.forall(_.indexDir.nonEmpty) &&
        numFiles.contains(mine.map(_.files.size).sum.toLong)
      complete &&
      (try {
        commitTaskParts(session, plan, mine,
          e => {
            val st = finals(e.path)
            if (st.getLen != e.size) throw new IllegalStateException(s"${st.getPath} changed after it was written")
            e.copy(path = st.getPath.toString, mtime = st.getModificationTime)
          })
        true
      } catch {
        case NonFatal(e) =>
          logWarning(
            s"sparkbloom: bloom index ${new Path(plan.indexDir).getName} could not take the entries the " +
              s"write into ${cmd.outputPath} built; refreshing it instead", e)
          false
      })
    }
    if (fallback.nonEmpty) afterWrite(session, cmd, Nil, only = Some(fallback.map(p => new Path(p.indexDir).getName)))
    b.plans.foreach(p => optimizeIfFragmented(session, tableOf(cmd), new Path(p.indexDir)))
  }

  /**
   * A write adds small segments to each index (one per task and column): once an index reads the small segments of
   * more than `spark.sparkbloom.maintainOnWrite.optimizeAfterSegments` writes (64), it is optimized (OPTIMIZE BLOOM
   * INDEX), so that a probe reads a bounded number of runs: on a background thread of its own
   * ([[BackgroundMaintenance.optimize]]; `spark.sparkbloom.maintainOnWrite.optimizeInBackground`, on by default), so
   * that neither the write that crossed the threshold nor the refreshes queued after it wait for it; otherwise
   * before the write returns. Never throws.
   */
  private def optimizeIfFragmented(session: SparkSession, table: TableRef, dir: Path): Unit =
    try {
      if (IndexManager.fragments(session, dir) > BloomConf.optimizeAfterSegments(session)) {
        if (BloomConf.optimizeInBackground(session)) BackgroundMaintenance.optimize(session, table, dir)
        else BloomIndexes.optimize(session, table, dir.getName)
      }
    } catch {
      case NonFatal(e) => logWarning(s"sparkbloom: could not optimize bloom index ${dir.getName} after a write", e)
    }

  /**
   * The indexes stored under the table at `root` that its writes maintain (all but those created with
   * `maintain_on_write = false`). Reads only their directories and newest commits: no table listing.
   */
  def indexNames(session: SparkSession, root: Path): Seq[String] = {
    val dir = IndexStore.indexesDir(root, BloomConf.indexRoot(session))
    val fs = dir.getFileSystem(session.sessionState.newHadoopConf())
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isDirectory).map(_.getPath)
      .filter(p => IndexStore.latestMeta(fs, p)._1.exists(!_.maintainOnWrite.contains(false))).map(_.getName).sorted
  }

  private def tableOf(cmd: InsertIntoHadoopFsRelationCommand): TableRef =
    cmd.catalogTable.map(t => TableRef.Catalog((t.identifier.database.toSeq :+ t.identifier.table).mkString(".")))
      .getOrElse(TableRef.Path(cmd.outputPath.toString))

  /** The table's indexes as they are before an overwrite. Never throws (none, on any error). */
  def definitions(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand): Seq[IndexDescription] =
    try BloomIndexes.list(session, tableOf(cmd)).filter(_.maintainOnWrite)
    catch { case NonFatal(e) => logWarning(s"sparkbloom: cannot read the bloom indexes of ${tableOf(cmd)}", e); Nil }

  /**
   * After the write committed: an incremental refresh of each index on the table, and the indexes an overwrite
   * deleted (`before`) made again over the new files. Never throws.
   */
  def afterWrite(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand, before: Seq[IndexDescription],
                 only: Option[Seq[String]] = None): Unit = {
    val table = tableOf(cmd)
    val names = try only.getOrElse(indexNames(session, cmd.outputPath))
    catch { case NonFatal(e) => logWarning(s"sparkbloom: cannot list the bloom indexes of $table", e); Nil }
    def attempt(name: String)(update: => Unit): Unit = {
      updateOrMark(session, cmd.outputPath, table.toString, name)(update); ()
    }
    lazy val resolved = BloomIndexes.resolve(session, table, refresh = true)
    names.foreach(name => attempt(name)(IndexManager.update(session, resolved, name, full = false)))
    before.filterNot(d => names.exists(_.equalsIgnoreCase(d.name))).foreach { d =>
      val options = Seq(d.fpp.map("fpp" -> _.toString), d.ndv.map("ndv" -> _.toString),
        d.falseReadsPerKey.map(BloomIndexes.FalseReadsPerKeyKey -> _.toString)).flatten.toMap
      attempt(d.name)(BloomIndexes.create(session, table, d.name, d.columns, options, ifNotExists = true))
    }
  }
}

/**
 * Maintenance in the background, for writes whose end no command of this session marks:
 *  - Structured Streaming sinks that commit without a command Spark plans (the file sink, Delta's sink): after each
 *    micro-batch, its progress event names the sink, and the sink's table, when it has maintained indexes, gets the
 *    incremental refresh of a write ([[MaintainOnWrite.afterTableWrite]]). The next batch waits for that refresh
 *    before it is planned ([[beforeStreamingPlan]]; Iceberg's batch right after its commit), so a lookup reads at most
 *    one batch the index does not cover (writes through `foreachBatch` are Spark or table-format writes, maintained
 *    before they return).
 *  - Catch-up after a read: a lookup that read files a maintained index does not cover (written by another engine,
 *    by a session with maintenance off, or by a write sparkbloom is not told of, such as Iceberg's
 *    `rewrite_data_files` procedure or Delta's REPLACE TABLE) queues the same refresh of its table
 *    (`spark.sparkbloom.maintainOnWrite.refreshOnRead`, on by default). After a refresh of a table fails, lookups do
 *    not queue it again for [[RetryAfterMs]] (a reader without write access to the table's storage fails every time).
 * The refreshes run on one background thread per application, in the order they are asked for; a table already
 * waiting for a refresh is not queued twice, so a refresh slower than the writes covers several of them at once.
 */
object BackgroundMaintenance extends Logging {
  private val registered = new java.util.WeakHashMap[SparkContext, Listener]()
  val RetryAfterMs: Long = 10 * 60 * 1000L

  /** Listens to `session`'s application (once per SparkContext); refreshes run with `session`'s settings. */
  def register(session: SparkSession): Unit = {
    val sc = session.sparkContext
    if (!registered.containsKey(sc)) registered.synchronized {
      if (!registered.containsKey(sc)) {
        val l = new Listener(session)
        sc.addSparkListener(l)
        registered.put(sc, l)
        SkippingLog.onUncovered(catchUp)
      }
    }
    if (watching.compareAndSet(false, true))
      TableFormats.all.foreach(f =>
        try f.watchCommits(committed)
        catch {
          case e @ (NonFatal(_) | _: LinkageError) => logWarning(s"sparkbloom: ${f.name} commits are not watched", e)
        })
  }

  private val watching = new java.util.concurrent.atomic.AtomicBoolean(false)

  /**
   * A commit no plan marked (a table format's procedure, a streaming sink; [[TableFormat.watchCommits]]), heard of on
   * the committing thread: a statement's commit brings the table's maintained indexes up to date before it returns
   * (on that thread, with the statement's session), a streaming batch's is queued, as the other sinks' are. Never
   * throws.
   */
  private def committed(c: TableFormat.Commit): Unit =
    try {
      val onThread = SparkSession.getActiveSession
      onThread.orElse(SparkSession.getDefaultSession).filter(s => !s.sparkContext.isStopped).foreach { session =>
        if (BloomConf.maintainOnWrite(session)) {
          // A table with no maintained index is only looked up (no cache of it refreshed, nothing listed).
          def written(): Option[TableFormat.Written] = {
            val root = BloomIndexes.resolve(session, c.table).root
            if (MaintainOnWrite.indexNames(session, root).isEmpty) None
            else Some(TableFormat.Written(BloomIndexes.resolve(session, c.table, refresh = true).root, c.table))
          }
          if (onThread.isDefined && !c.streaming) written().foreach { w =>
            logInfo(s"sparkbloom: refreshing the bloom indexes of ${c.table.display} (${c.what})")
            MaintainOnWrite.afterTableWrite(session, Seq(w))
          }
          else listenerOf(session).foreach { l =>
            val refreshed = l.queue(c.table.display, written(), c.what, afterLookup = false, session)
            if (c.streaming) streamingBatch(session).foreach { case (query, batch) =>
              l.whenRefreshed(refreshed, query, batch)
              waitFor(session, c.table.display, refreshed, s"streaming batch $batch of query $query")
            }
          }
        }
      }
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: bloom indexes of ${c.table.display} not brought up to date (${c.what})", e)
    }

  /**
   * Waits until every refresh queued for `session`'s application so far has run, and every background OPTIMIZE
   * queued by then or by those refreshes (tests, benchmarks); false after `timeoutMs`.
   */
  def await(session: SparkSession, timeoutMs: Long): Boolean = {
    val deadline = System.currentTimeMillis() + timeoutMs
    // the refreshes first: one may queue an OPTIMIZE
    listenerOf(session).forall(_.await(timeoutMs)) && drained(optimizer, deadline - System.currentTimeMillis())
  }

  /** Whether every task `executor` was given so far has run within `timeoutMs`. */
  private def drained(executor: java.util.concurrent.ExecutorService, timeoutMs: Long): Boolean = {
    val done = new java.util.concurrent.CountDownLatch(1)
    executor.execute(() => done.countDown())
    done.await(math.max(0L, timeoutMs), java.util.concurrent.TimeUnit.MILLISECONDS)
  }

  /** The indexes (their directories) an OPTIMIZE is queued or running for. */
  private val optimizing = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()
  private lazy val optimizer = java.util.concurrent.Executors.newSingleThreadExecutor { (r: Runnable) =>
    val t = new Thread(r, "sparkbloom-background-optimize")
    t.setDaemon(true)
    t
  }

  /**
   * OPTIMIZE BLOOM INDEX of the index at `dir` on `table`, on a thread of its own (one per JVM, one index at a time),
   * with the settings of `session`; not queued again while one is queued or running for that index. The writes and
   * refreshes that commit meanwhile are not held up: the OPTIMIZE re-bases its commit on theirs
   * ([[IndexManager.optimize]]). A failure is logged: the index stays as it was, its small segments read as before.
   */
  def optimize(session: SparkSession, table: TableRef, dir: Path): Unit = {
    val key = dir.toString
    if (optimizing.add(key)) optimizer.execute { () =>
      try {
        SparkSession.setActiveSession(session)
        logInfo(s"sparkbloom: optimizing bloom index ${dir.getName} of ${table.display} in the background")
        BloomIndexes.optimize(session, table, dir.getName)
      } catch {
        case NonFatal(t) => logWarning(s"sparkbloom: bloom index ${dir.getName} of ${table.display} not optimized", t)
      } finally optimizing.remove(key)
    }
  }

  /** Test hook: runs on the background thread before each refresh of a table with maintained indexes. */
  @volatile private[sparkbloom] var beforeRefresh: () => Unit = () => ()

  /** Waits of streaming batches that ran out of `streamingWaitTimeout` and went on without the refresh. */
  private[sparkbloom] val waitsTimedOut = new java.util.concurrent.atomic.AtomicLong()

  /** Spark's local properties on a streaming query's thread: the query's id, the micro-batch it runs. */
  private val QueryIdKey = "sql.streaming.queryId"
  private val BatchIdKey = "streaming.sql.batchId"

  /** The streaming query and micro-batch this thread runs, if it is a query's thread. */
  private def streamingBatch(session: SparkSession): Option[(String, Long)] = {
    val sc = session.sparkContext
    for {
      query <- Option(sc.getLocalProperty(QueryIdKey))
      batch <- Option(sc.getLocalProperty(BatchIdKey)).flatMap(b => scala.util.Try(b.toLong).toOption)
    } yield (query, batch)
  }

  /** This module's own threads: they never wait for a refresh (it may be queued behind the task they run). */
  private def onMaintenanceThread: Boolean = Thread.currentThread().getName.startsWith("sparkbloom-background-")

  /** Per streaming query (its id): the table its sink writes (learnt from its progress events). */
  private val sinkTables = new java.util.concurrent.ConcurrentHashMap[String, TableFormat.Written]()
  /** Per streaming query: the newest batch whose files a refresh has covered. */
  private val coveredThrough = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Long]()
  /** Per streaming query: the batch last seen planned (a batch plans several queries; it waits at the first). */
  private val planning = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Long]()
  /** Per streaming query: the refresh its newest progress event queued, and that event's batch. */
  private val afterBatch = new java.util.concurrent.ConcurrentHashMap[String,
    (Long, java.util.concurrent.CompletableFuture[java.lang.Boolean])]()
  /** Per table (its key): whether its last refresh found maintained indexes on it. */
  private val indexed = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Boolean]()

  private def covered(query: String, batch: Long): Unit =
    coveredThrough.merge(query, batch, (a: java.lang.Long, b: java.lang.Long) => math.max(a, b))

  private def forget(query: String): Unit = {
    sinkTables.remove(query); coveredThrough.remove(query); planning.remove(query); afterBatch.remove(query)
  }

  /**
   * The sink waits for the refresh, so a lookup reads at most one micro-batch the index does not cover. Called as
   * `session` plans anything (the write rule): on a streaming query's thread, the first plan of batch N of a query
   * whose sink writes a table with maintained indexes (the file sink, Delta's sink; learnt from the query's progress)
   * waits until a refresh that started after batch N-1 committed has run, unless one already has (the refresh its
   * progress event queued). Up to [[BloomConf.streamingWaitTimeoutMs]]; never throws (the stream's interrupt, when it
   * is being stopped, is passed on).
   */
  def beforeStreamingPlan(session: SparkSession): Unit =
    try if (!onMaintenanceThread && BloomConf.maintainOnWrite(session)) streamingBatch(session).foreach {
        case (query, batch) =>
          val seen = planning.put(query, batch)
          val w = sinkTables.get(query)
          // whether the table has maintained indexes: known from its last refresh, else looked up (an index created
          // since; for a table without one, a look at its index directory each batch)
          def hasIndexes: Boolean = indexed.getOrDefault(w.root.toString, false) || {
            val has = MaintainOnWrite.indexNames(session, w.root).nonEmpty
            indexed.put(w.root.toString, has)
            has
          }
          if (batch > 0 && (seen == null || seen.longValue != batch) && w != null &&
            Option(coveredThrough.get(query)).forall(_ < batch - 1) && hasIndexes)
            listenerOf(session).foreach { l =>
              // the refresh batch N-1's progress event queued covers it (queued after its commit): wait for that one
              val queued = Option(afterBatch.get(query)).filter(_._1 >= batch - 1).map(_._2)
              val refreshed = queued.getOrElse {
                val r = l.queue(w, s"before streaming batch $batch", afterLookup = false, session)
                l.whenRefreshed(r, query, batch - 1)
                r
              }
              waitFor(session, w.root.toString, refreshed, s"streaming batch $batch of query $query")
            }
      }
    catch {
      case NonFatal(e) => logWarning("sparkbloom: a streaming batch did not wait for its table's bloom indexes", e)
    }

  /**
   * Waits (up to the streaming timeout) for `refreshed`, the refresh queued as `table` (a table not known to have
   * maintained indexes is waited for once: its refresh is a look at its index directory). Never throws.
   */
  private def waitFor(session: SparkSession, table: String,
                      refreshed: java.util.concurrent.CompletableFuture[java.lang.Boolean], what: String): Unit =
    try {
      val timeout = BloomConf.streamingWaitTimeoutMs(session)
      if (timeout > 0 && !onMaintenanceThread && indexed.getOrDefault(table, true))
        refreshed.get(timeout, java.util.concurrent.TimeUnit.MILLISECONDS)
    } catch {
      case _: InterruptedException => Thread.currentThread().interrupt()
      case _: java.util.concurrent.TimeoutException =>
        waitsTimedOut.incrementAndGet()
        logWarning(s"sparkbloom: $what did not wait longer for the refresh of the bloom indexes of $table")
      case NonFatal(e) => logWarning(s"sparkbloom: $what did not wait for the bloom indexes of $table", e)
    }

  private def listenerOf(session: SparkSession): Option[Listener] =
    Option(registered.synchronized(registered.get(session.sparkContext)))

  /** A lookup read files index `v` does not cover: its table's maintained indexes are refreshed, when allowed. */
  private def catchUp(session: SparkSession, v: IndexVersion, s: ScanSkipping): Unit =
    if (BloomConf.refreshOnRead(session) && BloomConf.maintainOnWrite(session) &&
      !v.meta.maintainOnWrite.contains(false)) {
      listenerOf(session).foreach(_.queue(
          TableFormat.Written(new Path(v.meta.tableRoot), TableRef.ofDisplay(v.meta.table)),
          s"a lookup read ${s.filesNotCovered} files bloom index ${v.meta.name} does not cover", afterLookup = true,
          session))
    }

  final class Listener(session: SparkSession) extends SparkListener {
    private val failedAt = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Long]()
    private val executor = java.util.concurrent.Executors.newSingleThreadExecutor { (r: Runnable) =>
      val t = new Thread(r, "sparkbloom-background-maintenance")
      t.setDaemon(true)
      t
    }

    override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
      case e: StreamingQueryListener.QueryProgressEvent if e.progress.sink != null =>
        try {
          if (BloomConf.maintainOnWrite(session)) {
            val query = e.progress.id.toString
            val written = TableFormats.all.iterator.flatMap(_.writtenBySink(session, e.progress.sink.description))
            written.take(1).foreach { w =>
              sinkTables.put(query, w)
              // the batch's refresh, unless the next batch waited for one that covers it already
              // an idle trigger's progress names the batch to come, not one that ran: it covers nothing yet
              val ran = Option(e.progress.durationMs).exists(_.containsKey("addBatch"))
              if (Option(coveredThrough.get(query)).forall(_ < e.progress.batchId)) {
                val refreshed = queue(w, "after a streaming batch", afterLookup = false)
                if (ran) {
                  afterBatch.put(query, (e.progress.batchId, refreshed))
                  whenRefreshed(refreshed, query, e.progress.batchId)
                }
              }
            }
          }
        } catch {
          case NonFatal(t) => logWarning("sparkbloom: a streaming batch's sink could not be told", t)
        }
      case e: StreamingQueryListener.QueryTerminatedEvent => forget(e.id.toString)
      case _ =>
    }

    /** Once `refreshed` has run without error, batch `batch` of streaming query `query` is covered. */
    def whenRefreshed(refreshed: java.util.concurrent.CompletableFuture[java.lang.Boolean], query: String,
                      batch: Long): Unit =
      refreshed.thenAccept((ok: java.lang.Boolean) => if (ok) covered(query, batch))

    /**
     * Queues the refresh of `w`'s maintained indexes, unless one is waiting or, for a catch-up `afterLookup`, one
     * failed within [[RetryAfterMs]] (every streaming batch is followed by a refresh, as before). The future completes
     * when a refresh that started after this call has run: true when it ran without error.
     */
    def queue(w: TableFormat.Written, why: String, afterLookup: Boolean,
              in: SparkSession = session): java.util.concurrent.CompletableFuture[java.lang.Boolean] =
      queue(w.root.toString, Some(w), why, afterLookup, in)

    private val pending = new java.util.concurrent.ConcurrentHashMap[String,
      java.util.concurrent.CompletableFuture[java.lang.Boolean]]()

    /**
     * The same, `written` resolved on the background thread (None: nothing to refresh). The refresh runs with the
     * settings of `in`, the session that wrote or looked up (a streaming sink's batch names none: the session that
     * registered this listener).
     */
    def queue(key: String, written: => Option[TableFormat.Written], why: String, afterLookup: Boolean,
              in: SparkSession): java.util.concurrent.CompletableFuture[java.lang.Boolean] = {
      val failed = afterLookup && Option(failedAt.get(key)).exists(t => System.currentTimeMillis() - t < RetryAfterMs)
      if (failed) return java.util.concurrent.CompletableFuture.completedFuture(false)
      val mine = new java.util.concurrent.CompletableFuture[java.lang.Boolean]()
      val queued = pending.putIfAbsent(key, mine)
      if (queued != null) return queued
      executor.execute { () =>
        pending.remove(key, mine)
        var ok = false
        try {
          // a pool thread started from a streaming query's thread inherits its local properties: not its query's
          val sc = in.sparkContext
          sc.setLocalProperty(QueryIdKey, null)
          sc.setLocalProperty(BatchIdKey, null)
          sc.clearJobGroup()
          SparkSession.setActiveSession(in)
          val resolved = written
          resolved match {
            case None => indexed.put(key, false); ok = true
            case Some(w) =>
              indexed.put(key, MaintainOnWrite.indexNames(in, w.root).nonEmpty)
              logInfo(s"sparkbloom: refreshing the bloom indexes of ${w.table.display} ($why)")
              beforeRefresh()
              if (MaintainOnWrite.afterTableWrite(in, Seq(w), fromLog = !afterLookup)) ok = true
              else failedAt.put(key, System.currentTimeMillis())
          }
        } catch {
          case NonFatal(t) =>
            failedAt.put(key, System.currentTimeMillis())
            logWarning(s"sparkbloom: bloom indexes of $key not refreshed ($why)", t)
        } finally mine.complete(ok)
      }
      mine
    }

    def await(timeoutMs: Long): Boolean = drained(executor, timeoutMs)
  }
}
