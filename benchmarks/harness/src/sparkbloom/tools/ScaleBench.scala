package sparkbloom.tools

import java.lang.management.ManagementFactory

import scala.collection.mutable

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, FileStatusWithMetadata, PartitionDirectory}
import org.apache.spark.sql.types.{LongType, StructType}

import sparkbloom.hash.PlainHash
import sparkbloom.index._
import sparkbloom.index.sliced.SlicedProbe
import sparkbloom.index.sliced._
import sparkbloom.predicate.BloomPredicate
import sparkbloom.scan.BloomSkippingFileIndex
import sparkbloom.sbbf.{Sbbf, Sizing}

/**
 * The scale benchmark behind `benchmarks/scale.py`. [[write]] writes a real index in the real
 * format (format 2: segments through [[SegmentWriter]], `layout.bin` through [[LayoutAssembler]] and
 * [[IndexStore]], a real commit) for a table of N row groups whose data files are simulated: they are
 * named in the index but not on disk, which is what lets 10^6 row groups fit here (a probe reads 32 bytes
 * per row group whatever the data). [[measure]] then runs the planning code of a lookup: the rule's part
 * (newest commit, [[IndexStore.load]]) and [[BloomSkippingFileIndex.listFiles]] over a simulated listing of
 * those files (Spark's own listing is not part of the figure). [[measureWhole]] measures the design before
 * block slicing: every filter loaded into the driver and probed one by one.
 */
object ScaleBench {
  /** Keys of column c in row group rg: c·10^12 + rg·V + j, j < V (distinct everywhere). */
  def key(c: Int, rg: Long, j: Int, valuesPerRg: Int): Long = c * 1000000000000L + rg * valuesPerRg + j

  def columnName(c: Int): String = s"k$c"

  def tableRoot(dir: String): Path = new Path(new Path(dir).toUri.toString + "/t")

  /** Writes version 1 of index `ix` over N simulated row groups; returns a JSON object of what was written. */
  def write(spark: SparkSession, dir: String, rowGroups: Int, columns: Int, rgPerFile: Int, valuesPerRg: Int,
            tasks: Int, falseReadsPerKey: Double, maxBitsPerValue: Double, format: String): String = {
    require(format == "hierarchy" || format == "flat", s"format $format")
    // "flat": the format before the hierarchy (sparkbloom 0.1): one level of segments of up to 32 MB, no
    // summaries, layout.bin in format 1 (fixed-width arrays, absolute paths).
    val flat = format == "flat"
    val t0 = System.nanoTime()
    val conf = spark.sessionState.newHadoopConf()
    val root = tableRoot(dir)
    val fs = root.getFileSystem(conf)
    val qualified = fs.makeQualified(root)
    val indexDir = new Path(IndexStore.indexesDir(qualified, None), "ix")
    if (fs.exists(indexDir)) fs.delete(indexDir, true)
    val dataDirName = "v1-simulated"
    fs.mkdirs(new Path(indexDir, dataDirName))
    val numFiles = (rowGroups + rgPerFile - 1) / rgPerFile
    val cols = (0 until columns).map(c => IndexedColumn(columnName(c), "BIGINT", None, None, Some(falseReadsPerKey)))
    val sizer = FilterSizer(cols.map(c => c.name -> (c.policy: FppPolicy)).toMap,
      cols.map(c => c.name -> rowGroups.toLong * valuesPerRg).toMap, maxBitsPerValue)
    val rgBytes = 1L << 20
    val entries = mutable.ArrayBuffer[EntryMeta]()
    val segments = mutable.ArrayBuffer[Segment]()
    val summaries = mutable.ArrayBuffer[SummaryFilter]()
    val filesPerTask = (numFiles + tasks - 1) / tasks
    var filterBytes = 0L
    for (task <- 0 until tasks) {
      val writer =
        if (flat) new SegmentWriter(fs, indexDir, dataDirName, task, maxSlots = Int.MaxValue)
        else new SegmentWriter(fs, indexDir, dataDirName, task, summaryFpp = Some(sizer.summaryFpp _))
      for (f <- task * filesPerTask until math.min(numFiles, (task + 1) * filesPerTask)) {
        val path = new Path(qualified, f"part-$f%07d.parquet").toString
        val rgs = math.min(rgPerFile, rowGroups - f * rgPerFile)
        for (r <- 0 until rgs; c <- 0 until columns) {
          val rg = f.toLong * rgPerFile + r
          val fpp = sizer.targetFpp(columnName(c), valuesPerRg, valuesPerRg, valuesPerRg.toLong * rgs)
          val filter = Sbbf.empty(Sizing.indexBytes(valuesPerRg, fpp))
          val hashes = Array.tabulate(valuesPerRg)(j => PlainHash.int64(key(c, rg, j, valuesPerRg)))
          hashes.foreach(filter.insert)
          val bytes = filter.toBytes
          filterBytes += bytes.length
          val (segment, slot) = writer.add(columnName(c), c, bytes, hashes, valuesPerRg, filter.observedFpp)
          entries += EntryMeta(path, rgs * rgBytes + 1024, 1700000000000L + f, r, 4L + r * rgBytes,
            4L + (r + 1) * rgBytes,
            valuesPerRg, columnName(c), "INT64", "", 0, false, false, valuesPerRg, valuesPerRg, "scan",
            filter.observedFpp.toFloat, segment, slot)
        }
      }
      segments ++= writer.close()
      summaries ++= writer.summaries
    }
    val links = SummaryWriter.write(fs, indexDir, dataDirName, summaries.toSeq)
    summaries.clear()
    val layout = LayoutAssembler.assemble(cols.map(_.name), None, entries.toSeq, segments.toSeq, links)
    entries.clear()
    if (flat) {
      val out = fs.create(new Path(new Path(indexDir, dataDirName), IndexStore.LayoutFile), false)
      try out.write(LayoutCodec.encodeV1(layout))
      finally out.close()
    } else IndexStore.writeLayout(fs, indexDir, dataDirName, layout)
    val stats = layout.columns.toSeq.map(c => ColumnStats.ofLayout(layout, c, maxBitsPerValue))
    IndexStore.commit(fs, conf, indexDir,
      IndexMeta("ix", s"parquet.`$qualified`", qualified.toString, cols, None, None, 1L,
        System.currentTimeMillis(), dataDirName, layout.numFiles, layout.numRowGroups,
        layout.numRowGroups.toLong * columns,
        0L, layout.numRowGroups.toLong * columns, filterBytes, Some(falseReadsPerKey), None, Some(maxBitsPerValue),
        Some(stats),
        Some(2), Some(Seq(dataDirName))))
    val layoutBytes = fs.getFileStatus(new Path(new Path(indexDir, dataDirName), IndexStore.LayoutFile)).getLen
    Json.obj(
      "row_groups" -> rowGroups, "files" -> numFiles, "columns" -> columns, "values_per_row_group" -> valuesPerRg,
      "build_tasks" -> tasks, "segments" -> layout.segments.length, "format" -> format,
      "summary_segments" -> layout.summaries.segments.length,
      "summary_bytes" -> layout.summaries.segments.map(_.fileLength).sum,
      "blocks_per_filter" -> layout.segments.map(_.blocks).distinct.sorted.mkString(","),
      "filter_bytes" -> filterBytes, "layout_bytes" -> layoutBytes,
      "expected_false_reads_per_key" -> stats.map(_.expectedFalseReadsPerKey).sum / columns,
      "write_seconds" -> (System.nanoTime() - t0) / 1e9)
  }

  /** A listing of the simulated files, as Spark's own file index would return it (built outside the timing). */
  final class SimulatedListing(files: Array[FileStatusWithMetadata], root: Path) extends FileIndex {
    override def rootPaths: Seq[Path] = Seq(root)
    override def listFiles(p: Seq[Expression], d: Seq[Expression]): Seq[PartitionDirectory] =
      Seq(PartitionDirectory(InternalRow.empty, files.toSeq))
    override def inputFiles: Array[String] = files.map(_.getPath.toString)
    override def refresh(): Unit = ()
    override def sizeInBytes: Long = files.iterator.map(_.getLen).sum
    override def partitionSchema: StructType = new StructType()
  }

  private def usedHeapAfterGc(): Long = {
    val mem = ManagementFactory.getMemoryMXBean
    var i = 0
    while (i < 4) { System.gc(); Thread.sleep(100); i += 1 }
    mem.getHeapMemoryUsage.getUsed
  }

  private def percentile(xs: Seq[Double], q: Double): Double = {
    val s = xs.sorted; s(math.min(s.size - 1, (q * s.size).toInt))
  }

  /**
   * Planning of a point lookup and an IN-100 over the index written by [[write]]: cold (sparkbloom's cache
   * empty) and warm, index bytes read, and the driver heap the cache retains afterwards.
   */
  def measure(spark: SparkSession, dir: String, valuesPerRg: Int, repeats: Int, cacheMaxBytes: Long): String = {
    val conf = spark.sessionState.newHadoopConf()
    val root = tableRoot(dir)
    val fs = root.getFileSystem(conf)
    val qualified = fs.makeQualified(root)
    val indexDir = new Path(IndexStore.indexesDir(qualified, None), "ix")
    IndexCache.setMaxBytes(cacheMaxBytes)
    IndexCache.clear()
    // The simulated listing: what Spark's InMemoryFileIndex would hold anyway (not counted as ours).
    val meta0 = IndexStore.latestMeta(fs, indexDir)._1.get
    val layout0 = IndexStore.load(fs, conf, indexDir, meta0).layout
    val numRowGroups = layout0.numRowGroups
    val listing = layout0.paths.indices.map(f =>
      FileStatusWithMetadata(
        new FileStatus(layout0.sizes(f), false, 1, 1L << 27, layout0.mtimes(f), new Path(layout0.paths(f))))).toArray
    val rgPerFile = layout0.firstRg(1) - layout0.firstRg(0)
    IndexCache.clear()
    val listed = new SimulatedListing(listing, qualified)
    val baseline = usedHeapAfterGc()
    val rnd = new scala.util.Random(42)
    def present(): Long = key(0, (rnd.nextDouble() * numRowGroups).toLong, rnd.nextInt(valuesPerRg), valuesPerRg)
    def absent(): Long = -1L - rnd.nextInt(Int.MaxValue)

    /** One lookup's planning, as the rule and the file index do it; returns (ms, files kept, bytes read). */
    def plan(values: Seq[Long]): (Double, Long, Long) = {
      val t = System.nanoTime()
      val meta = IndexStore.latestMeta(fs, indexDir)._1.get
      val v = IndexStore.load(fs, conf, indexDir, meta)
      val pred = BloomPredicate.In(columnName(0), LongType, values)
      val index = new BloomSkippingFileIndex(spark, listed, Seq(v -> pred), new RowGroupSelection(true), "scale")
      val kept = index.listFiles(Nil, Nil).map(_.files.size.toLong).sum
      val ms = (System.nanoTime() - t) / 1e6
      (ms, kept, index.lastSkipping.get.indexBytesRead)
    }

    /**
     * The index's own part of the planning, which does not depend on the listing: newest commit, layout (cached
     * when warm), and the block-sliced probe of every row group. The rest of [[plan]] is matching each listed file
     * to the index (a hash lookup per listed file, proportional to Spark's own listing).
     */
    def indexOnly(values: Seq[Long]): (Double, Int) = {
      val t = System.nanoTime()
      val meta = IndexStore.latestMeta(fs, indexDir)._1.get
      val v = IndexStore.load(fs, conf, indexDir, meta)
      val bits = Probers.sliced(spark, v, new Probers.Counters)
        .mightMatch(BloomPredicate.In(columnName(0), LongType, values))
      ((System.nanoTime() - t) / 1e6, bits.cardinality())
    }

    // First lookup of this JVM (classes loading, JIT), then warm-ups; "cold" = sparkbloom's cache emptied
    // (layout, runs, listing match all gone) in a warmed-up JVM. The OS page cache may hold the index files.
    val (pointFirst, _, coldBytes) = plan(Seq(present()))
    (0 until 3).foreach(_ => plan(Seq(present())))
    val colds = (0 until math.max(3, repeats / 4)).map { _ => IndexCache.clear(); plan(Seq(present())) }
    val pointCold = percentile(colds.map(_._1), 0.5)
    val coldKept = colds.head._2
    val warmPoint = (0 until repeats).map { _ =>
      val k = present(); plan(Seq(k)); plan(Seq(k))
    }
    val pointWarm = warmPoint.map(_._1)
    val absentWarm = (0 until repeats).map { _ =>
      val k = absent(); plan(Seq(k)); plan(Seq(k))
    }
    val retainedAfterPoints = usedHeapAfterGc() - baseline
    val cacheAfterPoints = IndexCache.usedBytes
    val inKeys = Seq.fill(100)(present())
    plan(inKeys)
    val in100 = (0 until repeats).map(_ => plan(inKeys))
    val indexPoint = (0 until repeats).map(_ => indexOnly(Seq(present()))._1)
    val indexIn100 = (0 until repeats).map(_ => indexOnly(inKeys)._1)
    val indexCold = percentile((0 until math.max(3, repeats / 4)).map { _ =>
        IndexCache.clear(); indexOnly(Seq(present()))._1
      }, 0.5)
    // What Spark's own file index does per query with the same listing (InMemoryFileIndex.listFiles wraps
    // every cached FileStatus again, after reading its length): the per-query floor sparkbloom's matching of the
    // listing (proportional to the files, like it) is measured against.
    val sparkFloor = percentile((0 until repeats).map { _ =>
        val t = System.nanoTime()
        val wrapped = listing.filter(_.getLen > 0).map(f => FileStatusWithMetadata(f.fileStatus, Map.empty))
        val ms = (System.nanoTime() - t) / 1e6
        assert(wrapped.length == listing.length)
        ms
      }, 0.5)
    // A run-time key set of 10,000 present keys (the key-set pruning issue's MERGE or join), planned whole.
    val keys10k = Seq.fill(10000)(present())
    plan(keys10k)
    val keys10kMs = percentile((0 until 3).map(_ => plan(keys10k)._1), 0.5)
    // False row groups per absent key, measured: 10,000 absent keys in IN lists of 500 (row groups set in
    // the answer, each list's keys absent from every row group; two keys sharing a false row group are
    // counted once, which at ~0.1 per key is rare).
    val absentLists = (0 until 20).map(_ => Seq.fill(500)(absent()))
    val falseRowGroups = absentLists.map(ks => indexOnly(ks)._2.toLong).sum
    val measuredFalsePerKey = falseRowGroups.toDouble / (20 * 500)
    val modelFalsePerKey = meta0.columnStats.flatMap(_.headOption).map(_.expectedFalseReadsPerKey).getOrElse(-1.0)
    val dataDir = new Path(indexDir, meta0.dataDir)
    val indexBytesTotal = fs.listStatus(dataDir).map(_.getLen).sum
    val layoutBytes = fs.getFileStatus(new Path(dataDir, IndexStore.LayoutFile)).getLen
    IndexCache.clear()
    (0 until 3).foreach(_ => plan(Seq(present())))
    // Matching a listing the cache has not seen (new FileStatus objects, e.g. after REFRESH TABLE): per file.
    val freshMs = newListing(spark, fs, conf, indexDir, listing, qualified, Seq(present()))
    (0 until 2).foreach(_ => plan(Seq(present()))) // the remembered listing is the table's own again
    val retained = usedHeapAfterGc() - baseline
    Json.obj(
      "row_groups" -> numRowGroups, "files" -> listing.length, "row_groups_per_file" -> rgPerFile,
      "keys10k_ms" -> keys10kMs, "spark_listing_per_query_ms" -> sparkFloor,
      "false_row_groups_per_absent_key_measured" -> measuredFalsePerKey,
      "false_row_groups_per_absent_key_model" -> modelFalsePerKey, "absent_keys_measured" -> 20 * 500,
      "index_bytes_total" -> indexBytesTotal, "layout_bytes" -> layoutBytes,
      "summary_segments" -> layout0.summaries.segments.length,
      "index_point_cold_ms" -> indexCold, "index_point_warm_ms" -> percentile(indexPoint, 0.5),
      "index_in100_warm_ms" -> percentile(indexIn100, 0.5),
      "point_new_listing_ms" -> freshMs, "point_first_ms" -> pointFirst,
      "segments" -> layout0.segments.length, "cache_max_bytes" -> cacheMaxBytes,
      "point_cold_ms" -> pointCold,
      "point_warm_ms" -> percentile(pointWarm, 0.5), "point_warm_ms_p90" -> percentile(pointWarm, 0.9),
      "absent_warm_ms" -> percentile(absentWarm.map(_._1), 0.5),
      "absent_files_kept_median" -> percentile(absentWarm.map(_._2.toDouble), 0.5),
      "point_files_kept_median" -> percentile(warmPoint.map(_._2.toDouble), 0.5),
      "in100_warm_ms" -> percentile(in100.map(_._1), 0.5), "in100_files_kept" -> in100.head._2,
      "index_bytes_read_point" -> coldBytes,
      "index_bytes_read_point_per_row_group" -> coldBytes.toDouble / numRowGroups,
      "point_cold_files_kept" -> coldKept,
      "driver_heap_retained_mb" -> retainedAfterPoints / 1e6, "cache_used_mb" -> cacheAfterPoints / 1e6,
      "driver_heap_retained_after_in100_mb" -> retained / 1e6,
      "cache_used_after_in100_mb" -> IndexCache.usedBytes / 1e6,
      "design" -> (if (layout0.summaries.isEmpty) "flat" else "hierarchy"))
  }

  /** A point lookup over a new listing of the same files (new objects): the per-file match is done again. */
  private def newListing(spark: SparkSession, fs: org.apache.hadoop.fs.FileSystem,
                         conf: org.apache.hadoop.conf.Configuration,
                         indexDir: Path, listing: Array[FileStatusWithMetadata], root: Path, values: Seq[Long])
      : Double = {
    val fresh = new SimulatedListing(listing.map(f =>
        FileStatusWithMetadata(new FileStatus(f.getLen, false, 1, 1L << 27,
          f.getModificationTime, f.getPath))), root)
    val t = System.nanoTime()
    val v = IndexStore.load(fs, conf, indexDir, IndexStore.latestMeta(fs, indexDir)._1.get)
    new BloomSkippingFileIndex(spark, fresh, Seq(v -> BloomPredicate.In(columnName(0), LongType, values)),
      new RowGroupSelection(true), "scale").listFiles(Nil, Nil)
    (System.nanoTime() - t) / 1e6
  }

  /**
   * The design before block slicing, on the same index: every filter read and held in the driver, then probed
   * one by one (cold = load + probe; warm = probe). Same JSON fields as [[measure]] where they apply.
   */
  def measureWhole(spark: SparkSession, dir: String, valuesPerRg: Int, repeats: Int): String = {
    val conf = spark.sessionState.newHadoopConf()
    val root = tableRoot(dir)
    val fs = root.getFileSystem(conf)
    val indexDir = new Path(IndexStore.indexesDir(fs.makeQualified(root), None), "ix")
    IndexCache.clear()
    val baseline = usedHeapAfterGc()
    val t = System.nanoTime()
    val v = IndexStore.load(fs, conf, indexDir, IndexStore.latestMeta(fs, indexDir)._1.get)
    val l = v.layout
    val c = l.column(columnName(0)).get
    // Load: every segment whole, de-sliced into one Sbbf per row group (the format-1 way).
    var bytesRead = 0L
    val filters = new Array[Sbbf](l.numRowGroups)
    for ((s, si) <- l.segments.zipWithIndex if s.column == c.name) {
      val in = fs.open(new Path(indexDir, s.file))
      val buf = try { val b = new Array[Byte](s.fileLength.toInt); in.readFully(0, b); b }
      finally in.close()
      bytesRead += buf.length
      val bitsets = Array.fill(s.count)(new Array[Byte](s.blocks * 32))
      var b = 0
      while (b < s.blocks) {
        var j = 0
        while (j < s.count) { System.arraycopy(buf, (s.runOffset(b) + 32L * j).toInt, bitsets(j), b * 32, 32); j += 1 }
        b += 1
      }
      l.slotToRg(si).zipWithIndex.foreach { case (rg, slot) =>
        if (rg >= 0) filters(rg) = Sbbf.fromBytes(bitsets(slot))
      }
    }
    val rnd = new scala.util.Random(42)
    def present(): Long = key(0, (rnd.nextDouble() * l.numRowGroups).toLong, rnd.nextInt(valuesPerRg), valuesPerRg)
    def probe(values: Seq[Long]): (Double, Int) = {
      val t1 = System.nanoTime()
      val hs = values.map(PlainHash.int64).toArray
      var kept = 0; var rg = 0
      while (rg < filters.length) { if (filters(rg) == null || hs.exists(filters(rg).mightContain)) kept += 1; rg += 1 }
      ((System.nanoTime() - t1) / 1e6, kept)
    }
    val cold = (System.nanoTime() - t) / 1e6 + probe(Seq(present()))._1
    val warm = (0 until repeats).map(_ => probe(Seq(present())))
    val inKeys = Seq.fill(100)(present())
    val in100 = (0 until math.max(3, repeats / 4)).map(_ => probe(inKeys))
    val retained = usedHeapAfterGc() - baseline
    val out = Json.obj(
      "row_groups" -> l.numRowGroups, "files" -> l.numFiles, "point_cold_ms" -> cold,
      "point_warm_ms" -> percentile(warm.map(_._1), 0.5), "in100_warm_ms" -> percentile(in100.map(_._1), 0.5),
      "index_bytes_read_point" -> bytesRead, "driver_heap_retained_mb" -> retained / 1e6,
      "point_files_kept_median" -> percentile(warm.map(_._2.toDouble), 0.5), "design" -> "whole index loaded")
    java.util.Arrays.fill(filters.asInstanceOf[Array[AnyRef]], null)
    out
  }

  /**
   * Planning of point lookups on a real table (real files, Spark's own listing): for each key, a fresh
   * `spark.read.parquet(path)` (Spark lists the files: `listing_ms`), then the optimizer (where the rule
   * reads the index), the physical plan and the scan's file listing with pruning (`FileIndex.listFiles`, which
   * Spark calls when the scan runs), with sparkbloom on and off. `overhead_ms` = planning on − planning off.
   * Then the lookup runs once with the index on: files Spark's scan read (`numFiles`) and rows (= index off).
   */
  def realFiles(spark: SparkSession, path: String, column: String, keys: Array[Long], repeats: Int): String = {
    import org.apache.spark.sql.execution.FileSourceScanExec
    import org.apache.spark.sql.functions.col
    def once(on: Boolean, key: Long): (Double, Double) = {
      spark.conf.set("spark.sparkbloom.enabled", on.toString)
      try {
        val t0 = System.nanoTime()
        val df = spark.read.parquet(path)
        val t1 = System.nanoTime()
        val q = df.where(col(column) === key)
        val plan = q.queryExecution.executedPlan
        plan.foreach {
          case s: FileSourceScanExec => s.relation.location.listFiles(s.partitionFilters, s.dataFilters)
          case _ =>
        }
        val t2 = System.nanoTime()
        ((t1 - t0) / 1e6, (t2 - t1) / 1e6)
      } finally spark.conf.unset("spark.sparkbloom.enabled")
    }
    (0 until 3).foreach(i => {
      once(on = true, keys(i % keys.length)); once(on = false, keys(i % keys.length))
    }) // warm-up
    val runs = (0 until repeats).map { i =>
      val k = keys(i % keys.length)
      val (listOff, planOff) = once(on = false, k)
      val (listOn, planOn) = once(on = true, k)
      (listOff, planOff, listOn, planOn)
    }
    val filesRead = keys.take(math.min(5, keys.length)).map { k =>
      val q = spark.read.parquet(path).where(col(column) === k)
      val rows = q.collect().length
      spark.conf.set("spark.sparkbloom.enabled", "false")
      val rowsOff = try spark.read.parquet(path).where(col(column) === k).collect().length
      finally spark.conf.unset("spark.sparkbloom.enabled")
      require(rows == rowsOff, s"key $k: $rows rows with the index, $rowsOff without")
      q.queryExecution.executedPlan.collect { case s: FileSourceScanExec => s.metrics("numFiles").value }.sum
    }
    val files = spark.read.parquet(path).inputFiles.length
    Json.obj("files" -> files, "repeats" -> repeats,
      "listing_ms" -> percentile(runs.map(_._1), 0.5),
      "planning_off_ms" -> percentile(runs.map(_._2), 0.5), "planning_on_ms" -> percentile(runs.map(_._4), 0.5),
      "overhead_ms" -> percentile(runs.map(r => r._4 - r._2), 0.5),
      "files_read_max" -> filesRead.max, "files_read" -> filesRead.mkString(","))
  }

  /** "1,2,3" as longs (py4j-friendly). */
  def longs(csv: String): Array[Long] = csv.split(",").map(_.trim.toLong)

  /** Minimal JSON for flat objects of strings and numbers. */
  private object Json {
    def obj(fields: (String, Any)*): String =
      fields.map { case (k, v) => s""""$k": ${value(v)}""" }.mkString("{", ", ", "}")
    private def value(v: Any): String = v match {
      case s: String => "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""
      case d: Double => if (d.isNaN || d.isInfinite) "null" else d.toString
      case other => other.toString
    }
  }
}
