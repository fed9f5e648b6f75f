package sparkbloom.index

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.util.LongAccumulator

import sparkbloom.BloomConf
import sparkbloom.parquet.StoreFiles
import sparkbloom.index.sliced.{EntryMeta, Segment, SegmentWriter, SummaryFilter, SummaryWriter}

/**
 * The build job: one task per group of data files. Each task reads the footer of its files, takes a
 * valid native bloom filter where a column chunk has one (harvest), otherwise reads only the indexed
 * columns' pages and hashes their values in the file's own physical type, sizes a filter from the
 * chunk's actual distinct count and the FPP its [[FilterSizer]] gives that row group, and emits one entry
 * row per (file, row group, column).
 * Each task writes its filters as block-sliced segments into the new version's directory (not visible until
 * committed) and reports the entries, without their bytes, to the driver, which writes the layout.
 */
object IndexBuilder {
  import FileIndexer.EncryptedPrefix

  def build(spark: SparkSession, files: Seq[DataFile], columns: Seq[IndexedColumn], harvest: Boolean,
            indexDir: Path, dataDirName: String, sizer: FilterSizer, slices: Option[Int] = None): BuildStats = {
    val job = new Job(spark, columns, harvest, indexDir, dataDirName)
    job.run(files, sizer, 0, Array.empty, deferScans = false, slices)
    job.stats(files.size)
  }

  /**
   * Harvest first, for indexes sized by the table budget: one job reads every footer, counts the values the
   * budget needs (exactly as [[SizingJobs.valuesUpperBound]] does) and indexes every file none of whose chunks
   * needs a scan; only the files with a chunk to scan go to a second job, sized by `sizerFor` those counts
   * plus `carried`. A table whose files all carry valid native filters is indexed in one job without reading
   * a page; the filters are the same as with the sizing job first.
   */
  def buildHarvestFirst(spark: SparkSession, files: Seq[DataFile], columns: Seq[IndexedColumn], indexDir: Path,
                        dataDirName: String, budgeted: Seq[String], carried: Map[String, Long],
                        sizerFor: Map[String, Long] => FilterSizer): BuildStats = {
    val job = new Job(spark, columns, harvest = true, indexDir, dataDirName)
    val counted = budgeted.toArray
    val first = job.run(files, null, 0, counted, deferScans = true)
    val counts = first.map(_._4).foldLeft(new Array[Long](counted.length)) { (a, b) =>
      a.indices.foreach(i => a(i) += b(i)); a
    }
    val pending = first.flatMap(_._3).toSeq
    if (pending.nonEmpty) {
      val sizer =
        sizerFor(counted.indices.map(i => counted(i) -> (carried.getOrElse(counted(i), 0L) + counts(i))).toMap)
      job.run(pending, sizer, first.length, Array.empty, deferScans = false)
    }
    job.stats(files.size)
  }

  /** One build's accumulators and results over one or two Spark jobs (partitions numbered across both). */
  private final class Job(spark: SparkSession, columns: Seq[IndexedColumn], harvest: Boolean, indexDir: Path,
                          dataDirName: String) {
    private val sc = spark.sparkContext
    private val hadoopConf = spark.sessionState.newHadoopConf()
    // Broadcast: each executor deserializes the configuration once, not once per task (a tenth of a harvest's
    // executor time when every task carried it).
    private val conf = sc.broadcast(new SerializableConf(hadoopConf))
    private val acc = Seq("rowGroups", "entries", "harvested", "scanned", "bytes").map(n =>
      n -> sc.longAccumulator(s"sparkbloom.$n")).toMap
    private val skipped = sc.collectionAccumulator[String]("sparkbloom.skipped")
    private val cols = columns.toArray
    private val fastPaths = BloomConf.buildFastPaths(spark)
    private val entries = mutable.Buffer[EntryMeta]()
    private val segments = mutable.Buffer[Segment]()
    private val summaries = mutable.Buffer[SummaryFilter]()

    /** Per partition: entries, segments, files deferred (their scans need sizing), value counts of `counted`. */
    def run(files: Seq[DataFile], sizer: FilterSizer, partitionOffset: Int, counted: Array[String],
            deferScans: Boolean, forcedSlices: Option[Int] = None)
        : Array[(Array[EntryMeta], Array[Segment], Array[DataFile], Array[Long], Array[SummaryFilter])] = {
      if (files.isEmpty) return Array.empty
      // A job that only harvests (scans are deferred) reads footers and filters, a few requests per file, in tasks of
      // up to HarvestFilesPerTask files that keep HarvestWindow files in flight: its segments then hold thousands of
      // row groups (a lookup reads one run per segment, one request each on an object store) however many cores
      // the cluster has. A job that scans pages is CPU-bound on a local disk: a few tasks per core, each reading one
      // file at a time; on a remote store its tasks keep a few files in flight too (remoteScanWindow).
      val slices = forcedSlices.getOrElse(
        if (deferScans) ((files.size + IndexBuilder.HarvestFilesPerTask - 1) / IndexBuilder.HarvestFilesPerTask)
        else math.max(1, math.min(files.size, sc.defaultParallelism * 4)))
      val remote = files.headOption.exists(f => StoreFiles.remote(new Path(f.path).getFileSystem(hadoopConf)))
      val window =
        if (deferScans) { if (remote) IndexBuilder.RemoteHarvestWindow else IndexBuilder.HarvestWindow }
        else if (remote) IndexBuilder.remoteScanWindow(files)
        else 1
      val (cols, harvest, conf, acc, skipped, fastPaths) =
        (this.cols, this.harvest, this.conf, this.acc, this.skipped, this.fastPaths)
      val dir = indexDir.toString
      val dataDirName = this.dataDirName
      val task = (partition: Int, it: Iterator[DataFile]) => {
        val writer = new SegmentWriter(new Path(dir).getFileSystem(conf.value.value), new Path(dir), dataDirName,
          partitionOffset + partition, summaryFpp = Option(sizer).map(s => s.summaryFpp _),
          maxSlots = if (deferScans) IndexBuilder.HarvestMaxSlots else SegmentWriter.DefaultMaxSlots)
        val counts = new Array[Long](counted.length)
        val deferred = mutable.Buffer[DataFile]()
        val entries = IndexBuilder.overlapped(it, window) { f =>
          // each file's counters apart (files in flight run on other threads), added up below in order
          val mine = acc.map { case (n, _) => n -> new LongAccumulator }
          val myCounts = new Array[Long](counted.length)
          val built = FileIndexer.indexFile(f, cols, harvest, sizer, conf.value.value, mine, skipped, fastPaths,
            counted, myCounts, deferScans)
          (f, built, mine, myCounts)
        }.flatMap { case (f, built, mine, myCounts) =>
          mine.foreach { case (n, a) => acc(n).add(a.value) }
          myCounts.indices.foreach(i => counts(i) += myCounts(i))
          built match {
            case Some(rows) => rows
            case None => deferred += f; Nil
          }
        }.map(b => entryMeta(b, writer, cols)).toArray
        val written = writer.close().toArray
        (entries, written, deferred.toArray, counts, writer.summaries.toArray)
      }
      // A few files of which this job reads only footers and native filters (scans wait for the next job), or a few
      // small files it reads whole (a streaming batch's, a small write's): read on the driver, without a Spark job
      // that would queue behind the application's own jobs (maintenance on write, a streaming query's batches).
      val local = forcedSlices.isEmpty && files.size <= IndexBuilder.LocalMaxFiles &&
        (deferScans || files.iterator.map(_.size).sum <= IndexBuilder.LocalMaxScanBytes)
      sc.setJobDescription(s"sparkbloom: index ${files.size} files")
      val out = try {
        if (local) {
          import scala.concurrent.{Await, Future}
          import scala.concurrent.duration.Duration
          implicit val ec: scala.concurrent.ExecutionContext = IndexBuilder.localPool
          val groups = files.grouped(math.max(1, (files.size + 1) / 2)).toSeq
          Await.result(Future.sequence(groups.zipWithIndex.map { case (g, i) => Future(task(i, g.iterator)) }),
            Duration.Inf).toArray
        } else sc.parallelize(files, slices).mapPartitionsWithIndex((p, it) => Iterator.single(task(p, it))).collect()
      } catch {
        case e: Exception if rootMessage(e).exists(_.contains(EncryptedPrefix)) =>
          throw new BloomIndexException(
            rootMessage(e).get.substring(rootMessage(e).get.indexOf(EncryptedPrefix) + EncryptedPrefix.length))
      } finally sc.setJobDescription(null)
      out.foreach { o => entries ++= o._1; segments ++= o._2; summaries ++= o._5 }
      out
    }

    /** The build's figures, once its jobs ran; stores the summaries the tasks made. */
    def stats(files: Int): BuildStats = {
      val links = SummaryWriter.write(indexDir.getFileSystem(hadoopConf), indexDir, dataDirName, summaries.toSeq)
      conf.unpersist()
      summaries.clear()
      BuildStats(files - skipped.value.size, acc("rowGroups").value, acc("entries").value, acc("harvested").value,
        acc("scanned").value, acc("bytes").value, skipped.value.asScala.toSeq, entries.toSeq, segments.toSeq,
        links)
    }
  }

  /**
   * Files a job reads on the driver instead of in a Spark job: up to 16 files of which it reads only footers and
   * native filters, or up to 16 files of 32 MiB in all that it reads whole.
   */
  val LocalMaxFiles = 16

  /**
   * Files per task of a job that only harvests, how many of a task's files are read at once (see run), and the
   * filters per segment it writes. Harvested filters have no summary (their values are not read), so a lookup
   * reads one run from every segment of the column: 8192 filters a segment make that one request per 8192 row
   * groups (a run of 256 KB, which an object store serves in about the time of a 32-byte one) instead of one per
   * 2048; the segment's bytes stay bounded by SegmentWriter's maxBytes.
   */
  val HarvestFilesPerTask = 8192
  val HarvestWindow = 16

  /**
   * [[HarvestWindow]] for files on a remote store, where a file's reads are one or two round trips of tens of
   * milliseconds each and little CPU: 64 in flight (1,000 files at 20 ms: 1.2 s with 16, 0.4 s with 64).
   */
  val RemoteHarvestWindow = 64
  val HarvestMaxSlots = 8192

  /**
   * Files a task that scans reads at once on a remote store: a file there is several round trips (its footer, then
   * its column chunks) of tens of milliseconds each, so one file after another leaves a task waiting. OPTIMIZE's
   * tasks, of 2,048 row groups each so that they write full segments, spent 134 s on 1,000 small files at 20 ms
   * one after another, against 23 s for Spark's scan of the same columns. Up to 8 files, and no more than
   * [[RemoteScanBytesInFlight]] of them at once by their sizes (a file's chunks of the indexed columns are held while
   * they are hashed); on a local disk, one.
   */
  def remoteScanWindow(files: Seq[DataFile]): Int =
    if (files.isEmpty) 1
    else math.max(1, math.min(RemoteScanWindow, (RemoteScanBytesInFlight / math.max(1L, files.map(_.size).max)).toInt))
  val RemoteScanWindow = 8
  val RemoteScanBytesInFlight: Long = 256L << 20

  /** Threads reading footers and filters for harvesting tasks, shared by the tasks of an executor. */
  private lazy val harvestIo: java.util.concurrent.ExecutorService = {
    val n = new java.util.concurrent.atomic.AtomicInteger()
    java.util.concurrent.Executors.newFixedThreadPool(RemoteHarvestWindow,
      (r: Runnable) => { val t = new Thread(r, s"sparkbloom-harvest-io-${n.incrementAndGet()}"); t.setDaemon(true); t })
  }

  /**
   * `it` mapped by `f`, in order, with up to `window` calls of `f` running at once on [[harvestIo]] (window 1: in
   * this thread). A call's exception is thrown where its result would have been returned.
   */
  private[index] def overlapped[A, B](it: Iterator[A], window: Int)(f: A => B): Iterator[B] =
    if (window <= 1) it.map(f)
    else new Iterator[B] {
      private val inFlight = new java.util.ArrayDeque[java.util.concurrent.Future[B]]()
      private def fill(): Unit = while (inFlight.size < window && it.hasNext) {
        val a = it.next()
        inFlight.add(harvestIo.submit(new java.util.concurrent.Callable[B] { def call(): B = f(a) }))
      }
      def hasNext: Boolean = { fill(); !inFlight.isEmpty }
      def next(): B = {
        fill()
        try inFlight.poll().get()
        catch {
          case e: java.util.concurrent.ExecutionException =>
            inFlight.forEach(_.cancel(true))
            throw e.getCause
        }
      }
    }
  val LocalMaxScanBytes: Long = 32L << 20

  private lazy val localPool: scala.concurrent.ExecutionContext = {
    val n = new java.util.concurrent.atomic.AtomicInteger()
    scala.concurrent.ExecutionContext.fromExecutorService(java.util.concurrent.Executors.newFixedThreadPool(2,
      (r: Runnable) => { val t = new Thread(r, s"sparkbloom-harvest-${n.incrementAndGet()}"); t.setDaemon(true); t }))
  }

  /**
   * An entry row (IndexData.schema) as the driver needs it; its filter goes to the task's segments.
   * `observedFpp`: the filter's, computed where it was built (`Sbbf.fromBytes(bytes).observedFpp`).
   */
  private[index] def entryMeta(b: FileIndexer.Built, writer: SegmentWriter, cols: Array[IndexedColumn])
      : EntryMeta = {
    val r = b.row; val observedFpp = b.fpp
    val column = r.getString(8)
    val bytes = r.getAs[Array[Byte]](17)
    val nonNull = r.getLong(14)
    val fpp = if (nonNull == 0) 0f else if (bytes == null) 1f else observedFpp
    val (segment, slot) =
      if (bytes == null) (null, -1)
      else writer.add(column, cols.indexWhere(_.name == column), bytes, b.hashes, b.nHashes, fpp.toDouble)
    EntryMeta(r.getString(0), r.getLong(1), r.getLong(2), r.getInt(4), r.getLong(5), r.getLong(6), r.getLong(7), column,
      r.getString(9), r.getString(10), r.getInt(11), r.getBoolean(12), r.getBoolean(13), nonNull, r.getLong(15),
      r.getString(16), fpp, segment, slot)
  }

  private def rootMessage(e: Throwable): Option[String] = {
    var t: Throwable = e; var found: Option[String] = None
    while (t != null && found.isEmpty) {
      if (t.getMessage != null && t.getMessage.contains(EncryptedPrefix)) found = Some(t.getMessage); t = t.getCause
    }
    found
  }
}
