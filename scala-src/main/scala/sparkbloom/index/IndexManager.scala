package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.SparkSession
import org.slf4j.LoggerFactory

import sparkbloom.BloomConf
import sparkbloom.index.sliced.{
  ColumnSlice, EntryMeta, IndexCache, Layout, LayoutAssembler, Segment, SegmentWriter, SummaryFilter, SummaryWriter
}
import sparkbloom.parquet.StoreFiles

/**
 * The indexes of a resolved table: create, refresh, drop, describe. Front ends reach it through the facade
 * `sparkbloom.api.BloomIndexes`, which resolves table names through the table formats first. User errors are
 * [[BloomIndexException]]s raised before anything is written; a failed build leaves the previous version in force.
 */
object IndexManager {
  private val log = LoggerFactory.getLogger(getClass)

  def create(spark: SparkSession, t: ResolvedTable, name: String, columns: Seq[ColumnSpec],
             options: Map[String, String], ifNotExists: Boolean): IndexDescription = {
    checkName(name)
    val opts = IndexOptionParser.parse(spark, options)
    val cols = IndexColumns.resolve(t, columns, opts)
    val dir = indexDir(spark, t, name)
    val fs = dir.getFileSystem(spark.sessionState.newHadoopConf())
    // one listing of the commits for both questions (three requests on an object store, for an index not there yet)
    val (existing, problems, versions) = IndexStore.latestMetaAndVersions(fs, dir)
    existing match {
      case Some(_) if ifNotExists => return describe(spark, t, name)
      case Some(_) => throw new BloomIndexException(s"Bloom index $name already exists on ${t.display}")
      case None =>
    }
    val next = versions.headOption.getOrElse(0L) + 1
    val listing = t.listing()
    val committed = buildVersion(spark, t, dir, name, cols, opts, next, listing, None, created = true)
    // The table as just listed for the build, and the commit just made: listing and reading them again would only
    // repeat that work (round trips on an object store).
    describeWith(spark, t, name, verify = false, Some(listing), Some(Committed(committed, problems, versions.size + 1)))
  }

  /** A commit [[describe]] is told of instead of listing the commits: its problems and the versions kept. */
  private case class Committed(meta: IndexMeta, problems: Seq[String], versionsKept: Int)

  def drop(spark: SparkSession, t: ResolvedTable, name: String, ifExists: Boolean): Boolean = {
    val dir = indexDir(spark, t, name)
    val fs = dir.getFileSystem(spark.sessionState.newHadoopConf())
    if (IndexStore.versions(fs, dir).isEmpty) {
      if (ifExists) return false
      throw new BloomIndexException(s"Bloom index $name does not exist on ${t.display}")
    }
    IndexStore.invalidate(dir)
    fs.delete(dir, true)
  }

  /**
   * Removes columns from an index in one new version (the remaining columns' entries are copied, nothing
   * is rescanned). Removing every column drops the index. Unknown columns are an error.
   */
  def dropColumns(spark: SparkSession, t: ResolvedTable, name: String, columns: Seq[String])
      : Option[IndexDescription] = {
    val dir = indexDir(spark, t, name)
    val conf = spark.sessionState.newHadoopConf()
    val fs = dir.getFileSystem(conf)
    val meta = IndexStore.latestMeta(fs, dir)._1.getOrElse(
      throw new BloomIndexException(s"Bloom index $name does not exist on ${t.display}"))
    val unknown = columns.filterNot(c => meta.columns.exists(_.name.equalsIgnoreCase(c)))
    if (unknown.nonEmpty)
      throw new BloomIndexException(s"Column(s) ${unknown.mkString(", ")} not in bloom index $name " +
        s"on ${t.display}; its columns are ${meta.columns.map(_.name).mkString(", ")}")
    val remaining = meta.columns.filterNot(c => columns.exists(_.equalsIgnoreCase(c.name)))
    if (remaining.isEmpty) { drop(spark, t, name, ifExists = false); return None }
    val current = IndexStore.load(fs, conf, dir, meta)
    if (current.problems.nonEmpty || current.memorySegments.nonEmpty) {
      // A damaged or format-1 version: rebuild what remains rather than carry damage or memory segments on.
      buildVersion(spark, t, dir, name, remaining, meta.options, meta.version + 1, t.listing(), None)
    } else {
      val dropped = meta.columns.map(_.name).filterNot(remaining.map(_.name).contains).toSet
      commitLayout(spark, fs, dir, meta.copy(columns = remaining, version = meta.version + 1),
        LayoutAssembler.dropColumns(current.layout, dropped), newDataDir(meta.version + 1))
    }
    Some(describe(spark, t, name))
  }

  def refresh(spark: SparkSession, t: ResolvedTable, name: String, full: Boolean): IndexDescription = {
    update(spark, t, name, full)
    describe(spark, t, name)
  }

  /**
   * [[refresh]] without describing the new version (maintenance on write, which does not show it). An incremental
   * refresh that loses the commit race to another update of the index (a REFRESH, a maintained write, the background
   * catch-up) is built again on the version that won, up to [[IncrementalAttempts]] times, so that they do not fail
   * each other; a full one fails with [[ConcurrentIndexUpdateException]], as it asked for a rebuild of its own.
   *
   * `fromLog` (maintenance after a commit): the table's changes since the version the index covers are read from
   * its log when its format can tell them ([[ResolvedTable.changesSince]]), so that the cost of keeping up with a
   * write does not grow with the table; otherwise, and after a failed update, the table is listed whole.
   */
  def update(spark: SparkSession, t: ResolvedTable, name: String, full: Boolean, fromLog: Boolean = false): Unit = {
    var attempt = 1
    while (true) {
      try return updateOnce(spark, t, name, full, fromLog)
      catch {
        case e: ConcurrentIndexUpdateException if !full && attempt < IncrementalAttempts =>
          log.info(s"sparkbloom: ${e.getMessage}; refreshing again on the newer version")
          backOff(attempt)
          attempt += 1
      }
    }
  }
  /** Writers racing for versions (maintenance on write from several jobs) take turns: each loss is a retry. */
  val IncrementalAttempts = 10

  /**
   * Before the next attempt of a commit that lost a race: a random pause growing with the attempts (up to 100 ms
   * times the attempt), so that writers that lost together do not race again in step.
   */
  private[index] def backOff(attempt: Int): Unit =
    Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(1L + 100L * math.min(attempt, 10)))

  private def updateOnce(spark: SparkSession, t: ResolvedTable, name: String, full: Boolean,
                         fromLog: Boolean): Unit = {
    val dir = indexDir(spark, t, name)
    val fs = dir.getFileSystem(spark.sessionState.newHadoopConf())
    val meta = IndexStore.latestMeta(fs, dir)._1.getOrElse(
      throw new BloomIndexException(s"Bloom index $name does not exist on ${t.display}"))
    val cols = meta.columns.map(c =>
      IndexColumns.stillThere(t, c).getOrElse(IndexColumns.resolve(t, Seq(c.spec), meta.options).head))
    val loaded = IndexStore.load(fs, spark.sessionState.newHadoopConf(), dir, meta)
    // Damage, or a format-1 version (its filters are only in memory): rebuild everything.
    val previous = if (full || loaded.problems.nonEmpty || loaded.memorySegments.nonEmpty) None else Some(loaded)
    val changed =
      if (!fromLog || previous.isEmpty || fs.exists(new Path(dir, NeedsRefresh))) None
      else meta.tableSnapshot.flatMap(s => changesSince(t, s))
    val files = changed.map(c => listingAfter(loaded.layout, c))
      .getOrElse(withNewerCovered(spark, t.listing(), loaded.layout))
    buildVersion(spark, t, dir, name, cols, meta.options, meta.version + 1, files, previous)
  }

  /** `t`'s changes since `snapshot`; None when its format cannot tell, or fails to (never throws). */
  private def changesSince(t: ResolvedTable, snapshot: String): Option[TableChanges] =
    try t.changesSince(snapshot)
    catch {
      case NonFatal(e) =>
        log.info(s"sparkbloom: the changes to ${t.display} since $snapshot are listed whole (${e.getMessage})"); None
    }

  /**
   * The table's files after `changes`, as far as an index version over the files before them (`before`) needs:
   * the files it covers that the changes left alone, and those they added. A file of the older version the index
   * does not cover stays uncovered (as it was), until a refresh from a whole listing.
   */
  private[index] def listingAfter(before: Layout, changes: TableChanges): TableListing = {
    val gone = changes.removed ++ changes.added.iterator.map(_.path)
    val kept = (0 until before.numFiles).iterator.filterNot(f => gone.contains(before.paths(f)))
      .map(f => DataFile(before.paths(f), before.sizes(f), before.mtimes(f))).toVector
    TableListing(kept ++ changes.added, Some(changes.snapshot))
  }

  /**
   * What a write task needs to index the files of a write into index `name` at `dir` (maintenance on write): the
   * index's columns, a data directory for the next version, and a sizer for the table as the write will leave it,
   * its values counted twice over (so that appends do not outgrow the budget before the next compaction).
   * None when the index cannot take a write's entries directly (a format-1 or damaged version: refresh instead).
   */
  def writePlan(spark: SparkSession, dir: Path): Option[WriteIndexer.Plan] = {
    val conf = spark.sessionState.newHadoopConf()
    val fs = dir.getFileSystem(conf)
    // (an index marked as having missed a write's files is refreshed instead: commitWritten checks the mark, beside
    // its other requests, so that a write does not wait for one more round trip before it starts)
    val meta = IndexStore.newestForLookup(fs, dir, BloomConf.lookupListingTtlMs(spark, fs))._1.getOrElse(return None)
    if (meta.formatVersion.getOrElse(1) < 2) return None
    val loaded = IndexStore.load(fs, conf, dir, meta)
    if (loaded.problems.nonEmpty || loaded.memorySegments.nonEmpty) return None
    val l = loaded.layout
    val values = meta.columns.map { c =>
      val n = l.column(c.name).map { s =>
        var sum = 0L; var rg = 0
        while (rg < l.numRowGroups) { sum += (if (s.nonNull(rg) >= 0) s.nonNull(rg) else l.rgRows(rg)); rg += 1 }
        sum
      }.getOrElse(0L)
      c.name -> math.max(2 * n, WriteProjectionFloor)
    }.toMap
    val sizer = FilterSizer(meta.columns.map(c => c.name -> c.policy).toMap, values, BloomConf.maxBitsPerValue(spark))
    Some(WriteIndexer.Plan(dir.toString, newDataDir(meta.version + 1), meta.columns.toArray, sizer,
      BloomConf.maintainShipMaxBytes(spark)))
  }

  /**
   * Marks an index that missed a write's files (its update failed after the write committed): the next maintained
   * write refreshes it from the table's listing rather than adding only its own files. Never throws.
   */
  def markNeedsRefresh(spark: SparkSession, dir: Path): Unit =
    try {
      val fs = dir.getFileSystem(spark.sessionState.newHadoopConf())
      fs.create(new Path(dir, NeedsRefresh), true).close()
    } catch { case NonFatal(e) => log.warn(s"could not mark $dir as needing a refresh: ${e.getMessage}") }

  private val NeedsRefresh = "_needs_refresh"

  /** The values a write into an index over fewer values is sized for (its row groups' share of the budget). */
  val WriteProjectionFloor = 1000000L

  /**
   * Commits the entries a write's tasks built (their segments already in `dataDirName`) on top of the newest
   * version: its files as they were, plus the written ones. Retried on top of a version another writer committed
   * meanwhile. Throws when it cannot commit; the written segments are then left for the next clean-up.
   *
   * The new version records the table version the one below it covers, unless `coveredAfter(that version, whether
   * the new version covers a path)` names a newer one it covers entirely (a table format's write, whose changes
   * since then are all in it).
   */
  def commitWritten(spark: SparkSession, dir: Path, dataDirName: String, entries: Seq[EntryMeta],
                    segments: Seq[Segment], summaries: Seq[SummaryFilter],
                    coveredAfter: (String, String => Boolean) => Option[String] = (_, _) => None): Unit = {
    val conf = spark.sessionState.newHadoopConf()
    val fs = dir.getFileSystem(conf)
    IndexStore.mkdirs(fs, new Path(dir, dataDirName))
    val written = entries.map(_.path).toSet
    var attempt = 0
    val ttl = BloomConf.lookupListingTtlMs(spark, fs)
    // the summaries stored while the newest commit and the mark of a missed write are checked (new files of this
    // write's own data directory, and two reads: the order does not matter, and on a remote store they take one
    // round trip)
    val (links, (first, marked)) = StoreFiles.both(fs)(SummaryWriter.write(fs, dir, dataDirName, summaries),
      StoreFiles.both(fs)(IndexStore.newestForLookup(fs, dir, ttl)._1,
        IndexStore.fileExists(fs, new Path(dir, NeedsRefresh))))
    // an index that missed a write's files takes no single write's entries: the caller refreshes it from the listing
    if (marked)
      throw new BloomIndexException(s"bloom index ${dir.getName} missed a write's files and needs a refresh")
    var checked: Option[Option[IndexMeta]] = Some(first)
    while (true) {
      // the newest commit as lookups know it (checked with one request; listed again after a lost commit)
      val meta = checked.getOrElse(IndexStore.newestForLookup(fs, dir, ttl)._1).getOrElse(
        throw new BloomIndexException(s"bloom index ${dir.getName} no longer exists"))
      checked = None
      val previous = IndexStore.load(fs, conf, dir, meta)
      if (previous.problems.nonEmpty || previous.memorySegments.nonEmpty)
        throw new BloomIndexException(s"bloom index ${meta.name} needs a refresh: ${previous.problems.mkString("; ")}")
      val keep = previous.layout.paths.iterator.filterNot(written.contains).toSet
      val layout = LayoutAssembler.assemble(meta.columns.map(_.name), Some((previous.layout, keep)), entries, segments,
        links)
      // The table version the new version covers: the one before, or a newer one `coveredAfter` vouches for
      val snapshot = meta.tableSnapshot.map(s =>
        try coveredAfter(s, p => layout.fileIndex.get(p) >= 0).getOrElse(s)
        catch { case NonFatal(_) => s })
      try {
        val committed = commitLayout(spark, fs, dir, meta.copy(version = meta.version + 1, tableSnapshot = snapshot),
          layout, dataDirName, keepOnFailure = true)
        IndexStore.cacheCommitted(dir, committed, layout)
        // every few versions: a version is a write, and cleaning lists the index (two LISTs: on a remote store after
        // the write returned, not before)
        if (committed.version % 8 == 0) {
          val (retention, grace) = (BloomConf.commitRetentionMs(spark), BloomConf.versionDirGraceMs(spark))
          StoreFiles.inBackground(fs) {
            cleanOldVersions(fs, dir, keep = Set(dataDirName, meta.dataDir) ++ meta.referencedDirs.getOrElse(Nil),
              retention, grace)
          }
        }
        return
      } catch {
        case e: ConcurrentIndexUpdateException =>
          attempt += 1
          if (attempt >= IncrementalAttempts) throw e
          backOff(attempt)
          fs.delete(new Path(new Path(dir, dataDirName), IndexStore.LayoutFile), false)
      }
    }
  }

  /**
   * OPTIMIZE BLOOM INDEX: the row groups whose filters sit in small segments (fewer than `minSlots` filters: one
   * per write under maintenance on write, or from incremental refreshes), or in segments without a summary under
   * the table budget, are built again from their values, sized for the table as it is now, into segments of up to
   * [[SegmentWriter.DefaultMaxSlots]] filters with their summaries. A probe then reads a number of runs bounded by
   * the table's size, not by how many writes made it; filters sized for a smaller table are re-sized. Files not
   * covered are indexed too; everything else is carried as it is. Returns the row groups rebuilt.
   */
  def optimize(spark: SparkSession, t: ResolvedTable, name: String, minSlots: Int = OptimizeMinSlots): Long = {
    val dir = indexDir(spark, t, name)
    val conf = spark.sessionState.newHadoopConf()
    val fs = dir.getFileSystem(conf)
    val meta = IndexStore.latestMeta(fs, dir)._1.getOrElse(
      throw new BloomIndexException(s"Bloom index $name does not exist on ${t.display}"))
    val cols = meta.columns.map(c =>
      IndexColumns.stillThere(t, c).getOrElse(IndexColumns.resolve(t, Seq(c.spec), meta.options).head))
    val loaded = IndexStore.load(fs, conf, dir, meta)
    if (loaded.problems.nonEmpty || loaded.memorySegments.nonEmpty) {
      // damaged, or format 1: a full build
      buildVersion(spark, t, dir, name, cols, meta.options, meta.version + 1, t.listing(), None, harvest = Some(false))
      return loaded.layout.numRowGroups.toLong
    }
    val l = loaded.layout
    val budgeted = meta.columns.filter(_.policy.isInstanceOf[FppPolicy.TableBudget]).map(_.name).toSet
    val small = l.segments.indices.filter { s =>
      val seg = l.segments(s)
      seg.count < minSlots || (budgeted.contains(seg.column) && l.summaries.summaryOf(s) < 0)
    }.toSet
    val rebuild = l.paths.indices.filter { f =>
      (l.firstRg(f) until l.firstRg(f + 1)).exists(rg =>
        l.columns.exists(c =>
          c.segment(rg) >= 0 &&
            small.contains(c.segment(rg))))
    }.map(l.paths(_)).toSet
    if (rebuild.isEmpty && small.isEmpty) return 0L
    buildVersion(spark, t, dir, name, cols, meta.options, meta.version + 1, withNewerCovered(spark, t.listing(), l),
      Some(loaded), rebuild = rebuild, harvest = Some(false), rowGroupsPerTask = Some(SegmentWriter.DefaultMaxSlots),
      rebase = true)
    l.paths.indices.filter(f => rebuild.contains(l.paths(f))).map(f => (l.firstRg(f + 1) - l.firstRg(f)).toLong).sum
  }

  /**
   * The table's listing, plus the files the newest version covers that the listing lacks but that are about as new
   * as the newest it lists and still there as indexed: written (and indexed by their write) after the table was
   * listed, so that a REFRESH or OPTIMIZE racing a maintained write does not drop them. Parquet tables only: Delta
   * and Iceberg listings are their snapshots.
   */
  private def withNewerCovered(spark: SparkSession, listing: TableListing, newest: Layout): TableListing =
    if (listing.snapshot.isDefined || listing.files.isEmpty) listing
    else {
      val listed = listing.files.iterator.map(_.path).toSet
      val since = listing.files.iterator.map(_.mtime).max - 60000L
      val conf = spark.sessionState.newHadoopConf()
      // as new as the listing, and there now as indexed (a file deleted since is dropped, as any other)
      val candidates = newest.paths.indices.filter(i => newest.mtimes(i) >= since && !listed.contains(newest.paths(i)))
        .take(1000)
      // as listed (an object store's HEAD may give another modification time than the listing recorded)
      val now = candidates.map(i => new Path(newest.paths(i))).groupBy(_.toUri.getAuthority).valuesIterator
        .flatMap(ps => scala.util.Try(Listed.statuses(ps.head.getFileSystem(conf), ps)).getOrElse(Map.empty))
        .map { case (p, st) => p.toString -> st }.toMap
      val newer = candidates.flatMap { i =>
        now.get(new Path(newest.paths(i)).toString)
          .filter(st => st.getLen == newest.sizes(i) && st.getModificationTime == newest.mtimes(i))
          .map(_ => DataFile(newest.paths(i), newest.sizes(i), newest.mtimes(i)))
      }
      if (newer.isEmpty) listing else listing.copy(files = listing.files ++ newer)
    }

  /** Segments holding fewer filters than this are merged by OPTIMIZE BLOOM INDEX. */
  val OptimizeMinSlots = 512

  /**
   * The writes (data directories) whose small segments (fewer than [[OptimizeMinSlots]] filters) `dir`'s newest
   * version still reads: a probe reads about one summary run per write, so maintenance on write optimizes the
   * index once there are more than `spark.sparkbloom.maintainOnWrite.optimizeAfterSegments`. One write of many
   * tasks is one, however many segments its tasks wrote.
   */
  def fragments(spark: SparkSession, dir: Path): Int = {
    val conf = spark.sessionState.newHadoopConf()
    val fs = dir.getFileSystem(conf)
    IndexStore.newestForLookup(fs, dir, BloomConf.lookupListingTtlMs(spark, fs))._1.map { m =>
      val l = IndexStore.load(fs, conf, dir, m).layout
      l.segments.filter(_.count < OptimizeMinSlots).map(_.file.takeWhile(_ != '/')).toSet.size
    }.getOrElse(0)
  }

  /**
   * VACUUM BLOOM INDEX: removes the versions a reader can no longer be using, as Delta's VACUUM removes data files:
   * a version superseded more than `retainHours` ago (its successor committed before then) loses its commit, and
   * the data directories no kept version reads, written before then, are deleted. The newest version is always kept.
   * Returns (versions removed, directories removed).
   */
  def vacuum(spark: SparkSession, t: ResolvedTable, name: String, retainHours: Double): (Int, Int) = {
    val dir = indexDir(spark, t, name)
    val fs = dir.getFileSystem(spark.sessionState.newHadoopConf())
    val versions = IndexStore.versions(fs, dir)
    if (versions.isEmpty) throw new BloomIndexException(s"Bloom index $name does not exist on ${t.display}")
    val cutoff = System.currentTimeMillis() - (retainHours * 3600 * 1000).toLong
    val metas = versions.map(v => v -> scala.util.Try(IndexStore.readMeta(fs, dir, v)).toOption)
    // versions(i + 1) is older than versions(i): it was superseded when versions(i) was committed
    val supersededAt = metas.indices.map(i =>
      if (i == 0) Long.MaxValue
      else metas(i - 1)._2.map(_.createdAtMillis)
        .getOrElse(Long.MaxValue))
    val newest = metas.indexWhere(_._2.isDefined) // the version readers use; none readable: touch nothing
    val (drop, keep) = metas.indices.partition(i => newest >= 0 && i > newest && supersededAt(i) < cutoff)
    drop.reverse.foreach(i => IndexStore.deleteCommit(fs, dir, metas(i)._1)) // oldest first (see expiredCommits)
    val live = keep.flatMap(i => metas(i)._2.toSeq.flatMap(m => m.referencedDirs.getOrElse(Nil) :+ m.dataDir)).toSet
    val dirs = fs.listStatus(dir).filter(s =>
      s.isDirectory && s.getPath.getName.startsWith("v") && !live.contains(s.getPath.getName) &&
        StoreFiles.lastModified(fs, s).exists(_ < cutoff)) // S3A lists a directory without a time: its files
    dirs.foreach(s => fs.delete(s.getPath, true))
    // a removed version's layout, in a directory whose segments later versions still read
    drop.flatMap(i => metas(i)._2).filter(m =>
      live.contains(m.dataDir) && !keep.exists(k =>
        metas(k)._2.exists(_.dataDir == m.dataDir))).foreach(m =>
      fs.delete(new Path(new Path(dir, m.dataDir), IndexStore.LayoutFile), false))
    IndexStore.invalidate(dir)
    (drop.size, dirs.length)
  }

  /** The retention VACUUM BLOOM INDEX applies without RETAIN (Delta's default: 7 days). */
  val DefaultRetainHours = 168.0

  def list(spark: SparkSession, t: ResolvedTable): Seq[IndexDescription] = {
    val base = IndexStore.indexesDir(t.root, BloomConf.indexRoot(spark))
    val fs = base.getFileSystem(spark.sessionState.newHadoopConf())
    if (!fs.exists(base)) Nil
    else fs.listStatus(base).toSeq.filter(_.isDirectory).map(_.getPath.getName).sorted
      .filter(n => IndexStore.versions(fs, new Path(base, n)).nonEmpty)
      .map(n => describe(spark, t, n))
  }

  /** `verify`: also read every run and check its CRC (indexes that fit `spark.sparkbloom.cache.maxBytes`). */
  def describe(spark: SparkSession, t: ResolvedTable, name: String, verify: Boolean = false,
               listed: Option[TableListing] = None): IndexDescription =
    describeWith(spark, t, name, verify, listed, None)

  private def describeWith(spark: SparkSession, t: ResolvedTable, name: String, verify: Boolean,
                           listed: Option[TableListing], committed: Option[Committed]): IndexDescription = {
    val dir = indexDir(spark, t, name)
    val conf = spark.sessionState.newHadoopConf()
    val fs = dir.getFileSystem(conf)
    val (metaOpt, commitProblems) =
      committed.map(c => (Option(c.meta), c.problems)).getOrElse(IndexStore.latestMeta(fs, dir))
    val meta = metaOpt.getOrElse(throw new BloomIndexException(s"Bloom index $name does not exist on ${t.display}"))
    val loaded = IndexStore.load(fs, conf, dir, meta)
    val l = loaded.layout
    val listing = listed.getOrElse(t.listing())
    val files = listing.files
    val current = files.map(_.path).toSet
    val covered = files.count(f => loaded.covers(f.path, f.size, f.mtime).isDefined)
    val rowGroupsOfCurrent =
      l.paths.indices.filter(i => current.contains(l.paths(i))).map(i => (l.firstRg(i + 1) - l.firstRg(i)).toLong).sum
    IndexDescription(name, t.display, dir.toString, meta.columns.map(_.spec), meta.fpp, meta.ndv, meta.version,
      meta.createdAtMillis, covered, rowGroupsOfCurrent,
      meta.harvested, meta.scanned, meta.sizeInBytes, files.size, files.size - covered,
      l.paths.count(p => !current.contains(p)),
      commitProblems ++ loaded.problems ++ (if (verify) IndexStore.verify(fs, loaded) else IndexCache.damageOf(dir)),
      meta.falseReadsPerKey, meta.columns.map(_.policy.describe), meta.maxBitsPerValue,
      meta.columnStats.getOrElse(Nil), SkippingLog.usageOf(dir.toString), meta.tableSnapshot, listing.snapshot,
      l.describeLevels, meta.maintainOnWrite.getOrElse(true),
      committed.map(_.versionsKept).getOrElse(IndexStore.versions(fs, dir).size),
      (l.segments.iterator ++ l.summaries.segments.iterator).map(_.file).toSet.size, CommitStore.of(fs).describe,
      harvestedOverBudget(meta))
  }

  /**
   * The columns of `meta` sized by the table budget whose filters, some of them harvested from the files, read more
   * than [[OverBudgetFactor]] times that budget per key: a writer's filters have a fixed FPP (parquet-java's default
   * 0.01), so their false reads grow with the table. OPTIMIZE BLOOM INDEX builds them again to the budget, with their
   * summaries. Past the bits-per-value ceiling an index sparkbloom builds can read more than its budget too, but it
   * holds no harvested filter, so it is not named here.
   */
  def harvestedOverBudget(meta: IndexMeta): Seq[String] =
    if (meta.harvested <= 0) Nil
    else {
      val stats = meta.columnStats.getOrElse(Nil)
      meta.columns.flatMap(c =>
        c.policy match {
          case FppPolicy.TableBudget(eps) =>
            stats.find(_.column == c.name).filter(_.expectedFalseReadsPerKey > OverBudgetFactor * eps).map(_ => c.name)
          case _ => None
        })
    }

  /** How far over its budget a harvested column may read before it is re-sized ([[harvestedOverBudget]]). */
  val OverBudgetFactor = 2.0

  private def newDataDir(version: Long): String = s"v$version-${java.util.UUID.randomUUID().toString.take(8)}"

  private def buildVersion(spark: SparkSession, t: ResolvedTable, dir: Path, name: String, cols: Seq[IndexedColumn],
                           opts: TableOptions, version: Long, listing: TableListing,
                           previous: Option[IndexVersion], rebuild: Set[String] = Set.empty,
                           harvest: Option[Boolean] = None, rowGroupsPerTask: Option[Int] = None,
                           rebase: Boolean = false, created: Boolean = false): IndexMeta = {
    val files = listing.files
    val conf = spark.sessionState.newHadoopConf()
    val fs = dir.getFileSystem(conf)
    val dataDirName = newDataDir(version)
    val dataDir = new Path(dir, dataDirName)
    val unchanged = previous.map { p =>
      files.filter(f => !rebuild.contains(f.path) && p.covers(f.path, f.size, f.mtime).isDefined).map(_.path).toSet
    }.getOrElse(Set.empty[String])
    val carried = previous.filter(_ => unchanged.nonEmpty).map(p => (p.layout, unchanged))
    val toBuild = files.filterNot(f => unchanged.contains(f.path))
    // The budget is shared by the table as it is now: carried row groups keep their filters, new ones are
    // sized against every current row group's values.
    val budgeted = cols.collect { case c if c.policy.isInstanceOf[FppPolicy.TableBudget] => c.name }
    def sizerFor(values: Map[String, Long]) =
      FilterSizer(cols.map(c => c.name -> c.policy).toMap, values, BloomConf.maxBitsPerValue(spark))
    val harvesting = harvest.getOrElse(BloomConf.harvest(spark))
    // OPTIMIZE: tasks of about `rowGroupsPerTask` row groups, so that each writes full segments
    val slices = rowGroupsPerTask.map { n =>
      val rgs = previous.map { p =>
        val byPath =
          p.layout.paths.indices.map(i => p.layout.paths(i) -> (p.layout.firstRg(i + 1) - p.layout.firstRg(i)))
            .toMap
        toBuild.map(f => byPath.getOrElse(f.path, 1).toLong).sum
      }.getOrElse(toBuild.size.toLong)
      math.max(1, math.min(toBuild.size, ((rgs + n - 1) / n).toInt))
    }
    try {
      IndexStore.mkdirs(fs, dataDir)
      val stats =
        // Harvesting, the sizing counts come with the first job, and a second job scans only what must be.
        if (harvesting && budgeted.nonEmpty && toBuild.nonEmpty)
          IndexBuilder.buildHarvestFirst(spark, toBuild, cols, dir, dataDirName, budgeted,
            SizingJobs.carriedCounts(budgeted, carried), sizerFor)
        else IndexBuilder.build(spark, toBuild, cols, harvesting, dir, dataDirName,
          sizerFor(
            if (toBuild.isEmpty) Map.empty else SizingJobs.valuesUpperBound(spark, toBuild, budgeted, carried, cols)),
          slices)
      if (stats.skipped.nonEmpty) log.warn(s"bloom index $name: files not indexed: ${stats.skipped.mkString("; ")}")
      val layout = LayoutAssembler.assemble(cols.map(_.name), carried, stats.entryMetas, stats.segments,
        stats.summaries)
      val meta = IndexMeta(name, t.display, t.root.toString, cols, opts.fpp, opts.ndv, version, 0L, dataDirName,
        0, 0, 0, 0, 0, 0, opts.falseReadsPerKey, if (opts.fppPerFile) Some(IndexedColumn.FileScope) else None,
        tableSnapshot = listing.snapshot, maintainOnWrite = opts.maintainOnWrite)
      val committed =
        if (!rebase) commitLayout(spark, fs, dir, meta, layout, dataDirName)
        else commitRebasing(spark, fs, dir, meta, layout, dataDirName, cols.map(_.name), stats)
      // This version covers the listing it was built from. A new index has no mark to clear: a write marks only an
      // index it found committed, so a mark there now is a write's since this commit, and stays.
      if (!created) {
        try fs.delete(new Path(dir, NeedsRefresh), false)
        catch { case NonFatal(_) => }
      }
      // housekeeping the statement need not wait for (on a remote store after it returns: three or four requests)
      val (retention, grace) = (BloomConf.commitRetentionMs(spark), BloomConf.versionDirGraceMs(spark))
      StoreFiles.inBackground(fs) {
        cleanOldVersions(fs, dir,
          keep =
            Set(dataDirName) ++ previous.toSeq.flatMap(p => p.meta.referencedDirs.getOrElse(Nil) :+ p.meta.dataDir),
          retention, grace)
      }
      committed
    } catch {
      case NonFatal(e) =>
        try fs.delete(dataDir, true)
        catch { case NonFatal(_) => }
        throw e
    }
  }

  /**
   * OPTIMIZE's commit of `layout` (its rebuilt filters, `built`, over the version it read), re-based when a write's
   * maintenance or a refresh committed first: the rebuilt filters of the files the newest version still holds as
   * they were replace that version's, and everything else is that version's (the files its writes added or
   * dropped, and the table version it covers). A rebuilt file the newest version no longer holds, or holds changed,
   * keeps the newest version's entries. Up to [[RebaseAttempts]] times; then, or over a damaged newest version, the
   * conflict is raised as before.
   */
  private def commitRebasing(spark: SparkSession, fs: FileSystem, dir: Path, meta: IndexMeta, layout: Layout,
                             dataDirName: String, columns: Seq[String], built: BuildStats): IndexMeta = {
    var (m, l, attempt) = (meta, layout, 0)
    beforeOptimizeCommit()
    while (true) {
      try return commitLayout(spark, fs, dir, m, l, dataDirName, keepOnFailure = true)
      catch {
        case e: ConcurrentIndexUpdateException if attempt < RebaseAttempts =>
          attempt += 1
          fs.delete(new Path(new Path(dir, dataDirName), IndexStore.LayoutFile), false)
          val newest = IndexStore.latestMeta(fs, dir)._1.getOrElse(throw e)
          val now = IndexStore.load(fs, spark.sessionState.newHadoopConf(), dir, newest)
          if (now.problems.nonEmpty || now.memorySegments.nonEmpty) throw e
          val nl = now.layout
          def asBuilt(e: EntryMeta): Boolean = {
            val i = nl.fileIndex.get(e.path)
            i >= 0 && nl.sizes(i) == e.size && nl.mtimes(i) == e.mtime
          }
          val rebuilt = built.entryMetas.filter(asBuilt)
          val same = rebuilt.iterator.map(_.path).toSet
          log.info(s"sparkbloom: OPTIMIZE of ${newest.name} re-based on version ${newest.version} " +
            s"(${same.size} rebuilt files still as they were)")
          l = LayoutAssembler.assemble(columns, Some((nl, nl.paths.iterator.filterNot(same.contains).toSet)), rebuilt,
            built.segments, built.summaries)
          m = newest.copy(version = newest.version + 1)
      }
    }
    throw new IllegalStateException("unreachable: the loop returns or throws")
  }
  val RebaseAttempts = 5
  /** Runs once before OPTIMIZE first tries to commit (tests: a write that commits in between). */
  @volatile private[sparkbloom] var beforeOptimizeCommit: () => Unit = () => ()

  /**
   * Writes `layout` into `dataDirName` and commits it as `meta.version`, with the figures DESCRIBE reports
   * computed from the layout (carried row groups included).
   */
  private def commitLayout(spark: SparkSession, fs: FileSystem, dir: Path, meta: IndexMeta, layout: Layout,
                           dataDirName: String, keepOnFailure: Boolean = false): IndexMeta = {
    val maxBpv = BloomConf.maxBitsPerValue(spark)
    IndexStore.mkdirs(fs, new Path(dir, dataDirName))
    try {
      // The layout's PUT, beside the check that the version this one follows is still committed: housekeeping
      // removes old commits oldest first, so while it is there, this version's commit was never removed, and a
      // conditional PUT of it that succeeds is a true publication, not an old number published again by a writer
      // whose view is older than the commit retention (which would fork the history).
      val (layoutBytes, baseThere) = StoreFiles.both(fs)(IndexStore.writeLayout(fs, dir, dataDirName, layout),
        IndexStore.previousCommitted(fs, dir, meta.version))
      if (!baseThere) {
        IndexStore.forget(dir)
        throw new ConcurrentIndexUpdateException(s"bloom index ${meta.name} was updated concurrently: version " +
          s"${meta.version - 1}, which this update follows, is no longer the newest; nothing was changed by this " +
          "one, retry the statement")
      }
      val stats = layout.columns.toSeq.map(c => ColumnStats.ofLayout(layout, c, maxBpv))
      def countSource(s: String) = layout.columns.map(_.source.count(_ == ColumnSlice.sourceId(s)).toLong).sum
      val referenced = (layout.segments.map(_.file.takeWhile(_ != '/')).toSet + dataDirName).toSeq.sorted
      val committed = meta.copy(
        createdAtMillis = System.currentTimeMillis(), dataDir = dataDirName, files = layout.numFiles,
        rowGroups = layout.numRowGroups, entries = layout.numRowGroups.toLong * layout.columns.length,
        harvested = countSource("harvest"), scanned = countSource("scan"), sizeInBytes = stats.map(_.sizeInBytes).sum,
        maxBitsPerValue = Some(maxBpv), columnStats = Some(stats), formatVersion = Some(2),
        referencedDirs = Some(referenced), layoutBytes = Some(layoutBytes))
      IndexStore.commit(fs, spark.sessionState.newHadoopConf(), dir, committed)
      committed
    } catch {
      case NonFatal(e) if !keepOnFailure =>
        try fs.delete(new Path(dir, dataDirName), true)
        catch { case NonFatal(_) => };
        throw e
    }
  }

  /**
   * Removes data directories no longer read by the newest two versions (readers may still use the previous
   * one); a version reads its own directory and those whose segments it still references. Also removes the commits
   * [[expiredCommits]] names, so that `_commits/` (listed by lookups, and by Spark's listing of a table whose
   * indexes are inside it) does not grow with every write the table ever had.
   */
  private def cleanOldVersions(fs: FileSystem, dir: Path, keep: Set[String], commitRetentionMs: Long,
                               graceMs: Long): Unit = try {
    val commits = IndexStore.commitTimes(fs, dir)
    val live = commits.take(2).flatMap { case (v, _) =>
      scala.util.Try {
        val m = IndexStore.readMeta(fs, dir, v); m.referencedDirs.getOrElse(Nil) :+ m.dataDir
      }.getOrElse(Nil)
    }.toSet ++ keep
    val now = System.currentTimeMillis()
    fs.listStatus(dir).filter(s =>
      s.isDirectory && s.getPath.getName.startsWith("v") && !live.contains(s.getPath.getName))
      // never a build in progress: a directory changed within the grace period (a minute), or whose age cannot be
      // told, stays
      .filter(s => StoreFiles.lastModified(fs, s).exists(t => now - t > graceMs))
      .foreach(s => fs.delete(s.getPath, true))
    IndexStore.deleteSupersededCommits(fs, dir, expiredCommits(commits, commitRetentionMs, now))
  } catch { case NonFatal(e) => log.warn(s"could not clean old versions of $dir: ${e.getMessage}") }

  /** Commits housekeeping keeps whatever their age: the newest ones, which writers racing this one may hold. */
  val CommitsAlwaysKept = 10

  /**
   * The versions whose commits housekeeping removes, of `commits` (version and commit time, highest first), oldest
   * first: the oldest ones beyond the newest [[CommitsAlwaysKept]] superseded (their successor committed) at least
   * `retentionMs` before `now`, up to the first that is not (so the removed ones are always the oldest: while a
   * version's commit is there, no later one was removed, which the commit of the version after it checks). A commit
   * whose successor's time is unknown (0) stays, and the newer ones with it. Negative `retentionMs`: none.
   */
  def expiredCommits(commits: Seq[(Long, Long)], retentionMs: Long, now: Long): Seq[Long] =
    if (retentionMs < 0) Nil
    else // the oldest run of them, oldest first: what is removed is always a prefix of the history
      commits.indices.drop(CommitsAlwaysKept).reverse
        .takeWhile(i => commits(i - 1)._2 > 0 && now - commits(i - 1)._2 >= retentionMs).map(i => commits(i)._1)

  def indexDir(spark: SparkSession, t: ResolvedTable, name: String): Path =
    new Path(IndexStore.indexesDir(t.root, BloomConf.indexRoot(spark)), name)

  private def checkName(name: String): Unit =
    if (!IndexStore.validName(name))
      throw new BloomIndexException(
        s"Invalid bloom index name '$name': use letters, digits and underscores, starting with a letter or underscore")
}
