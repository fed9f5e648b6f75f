package sparkbloom.write

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, V2WriteCommand}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}
import org.apache.spark.sql.execution.command.{DataWritingCommandExec, ExecutedCommandExec}
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.datasources.v2.AppendDataExec

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.formats.TableFormats
import sparkbloom.index.{IndexDescription, IndexManager, IndexStore, TableFormat, TableRef}

/**
 * The write rule ([[MaintainOnWrite.WrapRule]], planning [[IndexMaintainingWrite]] and [[IndexMaintainingTableWrite]])
 * and the refresh that brings a table's indexes up to date after a write committed (writes whose tasks index their
 * files: [[TaskIndexing]]).
 */
object MaintainOnWrite extends Logging {
  import TaskIndexing.{indexedByTasks, indexedByV2Tasks}

  /** The physical rule: Parquet writes into a table that has bloom indexes run through [[IndexMaintainingWrite]]. */
  final class WrapRule(session: SparkSession) extends ColumnarRule {
    override def preColumnarTransitions: Rule[SparkPlan] = (plan: SparkPlan) => {
      BackgroundMaintenance.register(session)
      StreamingCatchUp.beforeStreamingPlan(session)
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
        // the newest commits as indexNames found them (no listing of their commits again)
        val ttl = BloomConf.lookupListingTtlMs(session, fs)
        val metas =
          indexNames(session, cmd.outputPath).flatMap(n => IndexStore.newestForLookup(fs, new Path(dir, n), ttl)._1)
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

  /**
   * A write adds small segments to each index (one per task and column): once an index reads the small segments of
   * more than `spark.sparkbloom.maintainOnWrite.optimizeAfterSegments` writes (64), it is optimized (OPTIMIZE BLOOM
   * INDEX), so that a probe reads a bounded number of runs: on a background thread of its own
   * ([[BackgroundMaintenance.optimize]]; `spark.sparkbloom.maintainOnWrite.optimizeInBackground`, on by default), so
   * that neither the write that crossed the threshold nor the refreshes queued after it wait for it; otherwise
   * before the write returns. Never throws.
   */
  private[write] def optimizeIfFragmented(session: SparkSession, table: TableRef, dir: Path): Unit =
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
    // as lookups find them (remembered on object stores: see IndexStore.indexDirs and newestForLookup)
    val ttl = BloomConf.lookupListingTtlMs(session, fs)
    IndexStore.indexDirs(fs, dir, ttl)
      .filter(p => IndexStore.newestForLookup(fs, p, ttl)._1.exists(!_.maintainOnWrite.contains(false)))
      .map(_.getName).sorted
  }

  private[write] def tableOf(cmd: InsertIntoHadoopFsRelationCommand): TableRef =
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
