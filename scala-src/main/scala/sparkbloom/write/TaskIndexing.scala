package sparkbloom.write

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.{SaveMode, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.datasources.v2.AppendDataExec
import org.apache.spark.util.CollectionAccumulator

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.formats.TableFormats
import sparkbloom.index.{IndexManager, IndexStore, Listed, SerializableConf, TableFormat, WriteIndexer}
import sparkbloom.index.sliced.EntryMeta
import sparkbloom.parquet.StoreFiles

/**
 * Writes whose tasks index what they write: the rule's choice of them (Spark's Parquet appends,
 * [[IndexingParquetFileFormat]]; V2 appends, [[IndexingV2Write]]), and the commit of what their tasks built into
 * each index once the write committed (the refresh of [[MaintainOnWrite]] when they could not cover it).
 */
object TaskIndexing extends Logging {
  import MaintainOnWrite.{afterTableWrite, afterWrite, indexNames, optimizeIfFragmented, tableOf}

  /** A write whose tasks index what they write: each index's plan, and what the tasks report. */
  final case class IndexedByTasks(plans: Seq[WriteIndexer.Plan], written: CollectionAccumulator[WriteIndexer.Part])

  /**
   * The write with its tasks indexing the files they write ([[IndexingParquetFileFormat]]), when that can cover
   * them (`spark.sparkbloom.maintainOnWrite.inTask`, on by default): an append, not into custom partition
   * locations, every index of the table readable in the current format and every indexed column written as a
   * type the tasks hash (bigint, int, smallint, tinyint, string, binary), not a partition column. Otherwise None
   * (the files' own filters are written and harvested after the write, [[MaintainOnWrite.withNativeFilters]]).
   * Never throws.
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
   * otherwise, or when an index cannot take them, the table's indexes get the refresh of
   * [[MaintainOnWrite.afterTableWrite]]. Never throws.
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
                              coveredAfter: (String, String => Boolean) => Option[String] = (_, _) => None,
                              listing: Option[(FileSystem, () => Unit)] = None): Unit = {
    def stored = if (mine.forall(_.shipped.isEmpty)) (Nil, Nil, Nil)
    else WriteIndexer.storeShipped(plan, session.sessionState.newHadoopConf(), mine.flatMap(_.shipped))
    // the written files listed while the shipped filters are stored (on a remote store, side by side)
    val (shippedEntries, shippedSegments, shippedSummaries) = listing match {
      case Some((fs, list)) => StoreFiles.both(fs)(stored, list())._1
      case None => stored
    }
    val entries = (mine.flatMap(_.entries) ++ shippedEntries).map(finalEntry)
    if (entries.nonEmpty)
      IndexManager.commitWritten(session, new Path(plan.indexDir), plan.dataDirName, entries,
        mine.flatMap(_.segments) ++ shippedSegments, mine.flatMap(_.summaries) ++ shippedSummaries, coveredAfter)
  }

  /**
   * After a write whose tasks indexed it: each index takes the entries its tasks built, their files mapped from
   * where the tasks wrote them to where the commit put them (the same partition directories and name under the
   * table), on top of its newest version. An index whose tasks did not report every file the write made, or whose
   * commit fails, gets the incremental refresh of [[MaintainOnWrite.afterWrite]] instead. Never throws.
   */
  def commitIndexedByTasks(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand, b: IndexedByTasks): Unit = {
    import scala.jdk.CollectionConverters._
    val parts = b.written.value.asScala.toSeq
    val numFiles = cmd.metrics.get("numFiles").map(_.value)
    val fs = cmd.outputPath.getFileSystem(session.sessionState.newHadoopConfWithOptions(cmd.options))
    val depth = cmd.partitionColumns.size + 1
    // as the table's listing shows them (an object store's HEAD may give another modification time)
    lazy val finals: Map[String, org.apache.hadoop.fs.FileStatus] = {
      val at = parts.flatMap(_.files).distinct.map { p =>
        val rel = new Path(p).toUri.getPath.split('/').filter(_.nonEmpty).takeRight(depth).mkString("/")
        p -> fs.makeQualified(new Path(cmd.outputPath, rel))
      }
      val listed = Listed.statuses(fs, at.map(_._2))
      at.map { case (p, q) => p -> listed.getOrElse(q, throw new java.io.FileNotFoundException(s"$q is not listed")) }
        .toMap
    }
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
          },
          listing = Some((fs, () => finals)))
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
}
