package sparkbloom.index

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.testing.SparkSessionSuite
import sparkbloom.testing.StreamShims.MemoryStream
import sparkbloom.write.{BackgroundMaintenance, StreamingCatchUp}

/**
 * Keeping an index that Spark's writes maintain (on by default) in shape: the per-index opt-out, OPTIMIZE BLOOM INDEX
 * merging the small segments many writes leave (by hand, or by the writes themselves past a threshold), VACUUM BLOOM
 * INDEX removing old versions with Delta's retention, and what DESCRIBE says about it. Every lookup is checked
 * against the same query without sparkbloom.
 */
class IndexMaintenanceSuite extends SparkSessionSuite {
  override protected def sparkConf: Map[String, String] = Map("spark.sql.shuffle.partitions" -> "2")

  private def rows(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).select(col("id"), concat(lit("k"), col("id")).as("s"))

  private def table(dir: String) = s"parquet.`$dir`"

  private def describe(dir: String, name: String = "ix"): Map[String, String] =
    spark.sql(s"DESCRIBE BLOOM INDEX $name ON ${table(dir)}").collect().map(r => r.getString(0) -> r.getString(1))
      .toMap

  /** Lookups of present and absent keys return the rows of the same query with sparkbloom off. */
  private def lookups(dir: String, present: Seq[Long]): Unit =
    for (k <- present :+ 99999999L; pred <- Seq(col("id") === k, col("s") === s"k$k")) {
      val o = compare(spark.read.parquet(dir).where(pred))
      assert(o.on == o.off, s"$pred: ${o.skipping}")
      if (present.contains(k)) assert(o.on.size == 1 && o.kept >= 1, s"$pred: ${o.skipping}")
    }

  test("maintenance on write is on by default; maintain_on_write = false opts one index out; bad values are errors") {
    val dir = tempDir("maint") + "/t"
    rows(0, 400, 4).write.parquet(dir)
    spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
    spark.sql(s"CREATE BLOOM INDEX off ON ${table(dir)} (id) OPTIONS (maintain_on_write = false)")
    assert(describe(dir)("Maintain On Write") == "true" && describe(dir, "off")("Maintain On Write") == "false")
    rows(1000, 1200, 2).write.mode("append").parquet(dir)
    assert(describe(dir)("Files Not Covered") == "0")
    assert(describe(dir, "off")("Files Not Covered") == "2", "the opted-out index leaves the new files uncovered")
    lookups(dir, Seq(1100L, 150L))
    // a refresh keeps the option
    spark.sql(s"REFRESH BLOOM INDEX off ON ${table(dir)} FULL")
    assert(describe(dir, "off")("Maintain On Write") == "false")
    val bad =
      intercept[Exception](spark.sql(s"CREATE BLOOM INDEX b ON ${table(dir)} (id) OPTIONS (maintain_on_write = 3)"))
    assert(bad.getMessage.contains("maintain_on_write must be true or false"), bad.getMessage)
    val perColumn =
      intercept[Exception](spark.sql(s"CREATE BLOOM INDEX b ON ${table(dir)} (id OPTIONS (maintain_on_write = false))"))
    assert(perColumn.getMessage.contains("option of the whole index"), perColumn.getMessage)
    val api = intercept[BloomIndexException](BloomIndexes.create(spark, TableRef.Path(dir), "b", Seq(ColumnSpec("id")),
      Map("maintain_on_write" -> "maybe"), ifNotExists = false))
    assert(api.getMessage.contains("must be true or false"))
    assert(BloomIndexes.list(spark, TableRef.Path(dir)).map(_.name).sorted == Seq("ix", "off"), "nothing was created")
  }

  test("a write of many small tasks adds one segment per column (its tasks ship their filters to the driver); " +
    "a task that wrote more writes its own") {
    val dir = tempDir("maint") + "/t"
    rows(0, 1000, 2).write.parquet(dir)
    spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
    val idx = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), "ix")
    def newest = {
      val conf = spark.sessionState.newHadoopConf()
      val fs = idx.getFileSystem(conf)
      IndexStore.load(fs, conf, idx, IndexStore.latestMeta(fs, idx)._1.get)
    }
    def segmentsOfNewest = { val v = newest; v.layout.segments.filter(_.file.startsWith(v.meta.dataDir)) }
    rows(10000, 12000, 20).write.mode("append").parquet(dir)
    assert(segmentsOfNewest.map(_.column).sorted.toSeq == Seq("id", "s"), segmentsOfNewest.toSeq)
    assert(segmentsOfNewest.forall(_.count == 20))
    lookups(dir, Seq(11234L))
    // 4 tasks of 20,000 values each, past what a task ships here (64 KB): each writes its own segments
    withSQLConf(BloomConf.MaintainShipMaxBytes -> "65536") {
      rows(1000000, 1080000, 4).write.mode("append").parquet(dir)
    }
    assert(segmentsOfNewest.length == 4 * 2, segmentsOfNewest.toSeq)
    assert(describe(dir)("Files Not Covered") == "0")
    lookups(dir, Seq(1034567L, 11999L))
  }

  /**
   * A table of 4 files indexed on `id` and `s`, then appended to 12 times (one file each, maintained): its directory
   * and its index's, the index reading the small segments of 12 writes. Under a large `optimizeAfterSegments`.
   */
  private def fragmentedTable(): (String, Path) = {
    val dir = tempDir("maint") + "/t"
    rows(0, 4000, 4).write.parquet(dir)
    spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
    for (i <- 1 to 12) rows(i * 10000L, i * 10000L + 1000, 1).write.mode("append").parquet(dir)
    (dir, IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), "ix"))
  }

  test("OPTIMIZE BLOOM INDEX merges the segments of many writes into few, with summaries, re-sized for the table") {
    withSQLConf(BloomConf.OptimizeAfterSegments -> "1000") {
      val (dir, idx) = fragmentedTable()
      val before = describe(dir)
      assert(before("Files Not Covered") == "0" && IndexManager.fragments(spark, idx) >= 12, before)
      val out = spark.sql(s"OPTIMIZE BLOOM INDEX ix ON ${table(dir)}").collect()
      assert(out.length == 1 && out.head.getString(0) == "ix" && out.head.getLong(2) == 16, out.toSeq)
      val after = describe(dir)
      assert(after("Files Not Covered") == "0" && after("Version").toLong == before("Version").toLong + 1, after)
      assert(after("Segment Files").toInt < before("Segment Files").toInt / 4, s"$before -> $after")
      val v = {
        val conf = spark.sessionState.newHadoopConf()
        val fs = idx.getFileSystem(conf)
        IndexStore.load(fs, conf, idx, IndexStore.latestMeta(fs, idx)._1.get)
      }
      assert(v.layout.segments.indices.forall(s => v.layout.summaries.summaryOf(s) >= 0), "every segment summarised")
      // Sized again for the table as it is (16,000 ids): the first 4,000 were sized for a table of 4,000, the
      // writes' for a projected 10^6 (the floor); now all meet the budget of 0.1, in fewer bytes.
      def expected(d: Map[String, String]) =
        d("Expected False Reads Per Key").split("; ").map(_.split(": ")(1).toDouble)
      assert(expected(after).forall(_ <= 0.1) && after("Size In Bytes").toLong < before("Size In Bytes").toLong,
        s"$before -> $after")
      lookups(dir, Seq(50500L, 120999L, 2000L))
      // nothing left to merge in a table this small but what one task wrote: a second OPTIMIZE changes little
      spark.sql(s"OPTIMIZE BLOOM INDEX ix ON ${table(dir)}")
      assert(describe(dir)("Segment Files").toInt <= after("Segment Files").toInt)
      lookups(dir, Seq(50500L))
    }
  }

  test("an OPTIMIZE that loses the commit race to a write and a refresh re-bases on them: no entry lost or revived") {
    withSQLConf(BloomConf.OptimizeAfterSegments -> "1000") {
      val (dir, idx) = fragmentedTable()
      val before = describe(dir)
      val fragmented = IndexManager.fragments(spark, idx)
      assert(fragmented >= 12 && before("Files Not Covered") == "0", before)
      // the file holding ids 10000..10999, which OPTIMIZE rebuilds
      val gone = new java.io.File(dir).listFiles().filter(_.getName.endsWith(".parquet"))
        .find(f => spark.read.parquet(f.getPath).where("id = 10500").count() == 1).get
      var raced = false
      // Between OPTIMIZE's build and its commit: a maintained append commits, then that file is deleted and a
      // REFRESH drops it. OPTIMIZE's commit then finds two newer versions.
      IndexManager.beforeOptimizeCommit = () => {
        IndexManager.beforeOptimizeCommit = () => ()
        rows(500000L, 500500L, 1).write.mode("append").parquet(dir)
        assert(gone.delete())
        spark.sql(s"REFRESH BLOOM INDEX ix ON ${table(dir)}").collect()
        raced = true
      }
      try spark.sql(s"OPTIMIZE BLOOM INDEX ix ON ${table(dir)}").collect()
      finally IndexManager.beforeOptimizeCommit = () => ()
      assert(raced)
      val after = describe(dir)
      assert(after("Version").toLong == before("Version").toLong + 3, s"$before -> $after")
      assert(after("Files In Table") == "16" && after("Files Covered") == "16" && after("Files Not Covered") == "0" &&
          after("Files Deleted") == "0", after)
      // the merged segments are the rebased version's; the append's are carried as it committed them
      assert(IndexManager.fragments(spark, idx) <= 2, s"$fragmented fragments before")
      lookups(dir, Seq(500250L, 120999L, 2000L))
      lookups(dir, Seq(60500L))
      val o = compare(spark.read.parquet(dir).where(col("id") === 10500L))
      assert(o.on.isEmpty && o.off.isEmpty, o.skipping)
    }
  }

  test("the writes themselves optimize an index once it reads the small segments of more than " +
    "optimizeAfterSegments writes") {
    // On a thread of its own by default (the write that crossed the threshold does not wait), or before the write
    // returns.
    for (background <- Seq(true, false)) withSQLConf(BloomConf.OptimizeAfterSegments -> "6",
      BloomConf.OptimizeInBackground -> background.toString) {
      val dir = tempDir("maint") + "/t"
      rows(0, 1000, 2).write.parquet(dir)
      spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
      val threads = new java.util.concurrent.ConcurrentLinkedQueue[String]()
      IndexManager.beforeOptimizeCommit = () => threads.add(Thread.currentThread.getName)
      val counts = try for (i <- 1 to 10) yield {
        rows(i * 10000L, i * 10000L + 500, 1).write.mode("append").parquet(dir)
        assert(BackgroundMaintenance.await(spark, 60000))
        describe(dir)("Segment Files").toInt
      }
      finally IndexManager.beforeOptimizeCommit = () => ()
      // two columns, each write a leaf segment and a summary per column: without merging 4 more per write
      assert(counts.max <= 4 * 6 + 8, counts)
      assert(counts.last < 4 * 10, counts)
      assert(describe(dir)("Files Not Covered") == "0")
      import scala.jdk.CollectionConverters._
      val ran = threads.asScala.toSeq
      assert(ran.nonEmpty && ran.forall(n => (n == "sparkbloom-background-optimize") == background), ran)
      lookups(dir, Seq(30250L, 100499L, 500L))
    }
  }

  test("an index harvested from filters that miss its budget is built again to the budget in the background") {
    // parquet-java's filters at fpp 0.01 for a quarter of each file's 1,000 values, over 40 one-row-group files: their
    // false reads per key sum to several times the budget of 0.1. CREATE returns with the harvested index; OPTIMIZE
    // then re-sizes it on the background thread.
    val dir = tempDir("maint") + "/t"
    Seq("id", "s").foldLeft(rows(0, 40000, 40).write) { (w, c) =>
      w.option(s"parquet.bloom.filter.enabled#$c", "true").option(s"parquet.bloom.filter.expected.ndv#$c", "250")
        .option(s"parquet.bloom.filter.fpp#$c", "0.01")
    }.parquet(dir)
    def check(resize: Boolean): Map[String, String] =
      withSQLConf(BloomConf.HarvestResizeInBackground -> resize.toString) {
        spark.sql(s"DROP BLOOM INDEX IF EXISTS ix ON ${table(dir)}")
        val threads = new java.util.concurrent.ConcurrentLinkedQueue[String]()
        IndexManager.beforeOptimizeCommit = () => threads.add(Thread.currentThread.getName)
        val created = try {
          val c =
            BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
              ifNotExists = false)
          assert(BackgroundMaintenance.await(spark, 120000))
          c
        } finally IndexManager.beforeOptimizeCommit = () => ()
        assert(created.filtersHarvested == 80 && created.filtersScanned == 0, created)
        assert(created.harvestedOverBudget.toSet == Set("id", "s"), created.columnStats)
        import scala.jdk.CollectionConverters._
        assert(threads.asScala.toSeq == (if (resize) Seq("sparkbloom-background-optimize") else Nil), threads)
        lookups(dir, Seq(0L, 20999L, 39999L))
        describe(dir)
      }
    val kept = check(resize = false)
    assert(kept("Version") == "1" && kept("Filters Harvested") == "80", kept)
    val resized = check(resize = true)
    assert(resized("Version") == "2" && resized("Filters Harvested") == "0" && resized("Filters Scanned") == "80",
      resized)
    val d = BloomIndexes.describe(spark, TableRef.Path(dir), "ix")
    assert(d.harvestedOverBudget.isEmpty && d.columnStats.forall(_.expectedFalseReadsPerKey <= 0.1), d.columnStats)
    assert(d.filesNotCovered == 0, d)
  }

  test("maintained appends racing REFRESH and OPTIMIZE of the same index lose no entry and no row") {
    val dir = tempDir("maint") + "/t"
    rows(0, 1000, 2).write.parquet(dir)
    spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
    val errors = new java.util.concurrent.ConcurrentLinkedQueue[Throwable]()
    @volatile var writing = true
    var lost = 0 // maintenance statements that lost the race: a clear error, nothing changed
    val writer = new Thread(() =>
      try for (i <- 1 to 8) rows(100000L + i * 1000, 100000L + i * 1000 + 100, 1).write.mode("append").parquet(dir)
      catch { case e: Throwable => errors.add(e) }
      finally writing = false)
    val maintainer = new Thread(() => {
      var i = 0
      while (writing || i < 2) {
        try spark.sql(s"${if (i % 2 == 0) "REFRESH" else "OPTIMIZE"} BLOOM INDEX ix ON ${table(dir)}").collect()
        catch {
          case _: ConcurrentIndexUpdateException => lost += 1
          case e: Throwable => errors.add(e)
        }
        i += 1
      }
    })
    writer.start(); maintainer.start(); writer.join(); maintainer.join()
    assert(errors.isEmpty, errors)
    val d = describe(dir)
    def history = {
      val idx = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), "ix")
      val fs = idx.getFileSystem(spark.sessionState.newHadoopConf())
      IndexStore.versions(fs, idx).reverse.map(v => IndexStore.readMeta(fs, idx, v))
        .map(m => s"v${m.version}: ${m.files} files, ${m.dataDir}, created ${m.createdAtMillis % 100000}").mkString(
          "; ")
    }
    assert(d("Files In Table") == "10" && d("Files Covered") == "10" && d("Files Not Covered") == "0",
      s"lost $lost; $history")
    assert(spark.read.parquet(dir).count() == 1800)
    lookups(dir, Seq(101050L, 108099L, 999L))
  }

  test("VACUUM BLOOM INDEX keeps what a reader may use: RETAIN under 168 hours is refused unless allowed; " +
    "then every version but the newest goes, with its layout, and lookups are unchanged") {
    val dir = tempDir("maint") + "/t"
    rows(0, 1000, 2).write.parquet(dir)
    spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
    for (i <- 1 to 4) rows(i * 10000L, i * 10000L + 500, 1).write.mode("append").parquet(dir)
    assert(describe(dir)("Versions Kept") == "5")
    val kept = spark.sql(s"VACUUM BLOOM INDEX ix ON ${table(dir)}").collect()
    assert(kept.map(r => (r.getString(0), r.getLong(1))).toSeq == Seq(("ix", 0L)), "all superseded within 7 days")
    val refused = intercept[Exception](spark.sql(s"VACUUM BLOOM INDEX ix ON ${table(dir)} RETAIN 0 HOURS"))
    assert(refused.getMessage.contains(BloomConf.VacuumRetentionCheck), refused.getMessage)
    val layouts = () =>
      new java.io.File(dir, "_sparkbloom/ix").listFiles().filter(_.isDirectory)
        .count(d => new java.io.File(d, "layout.bin").exists())
    assert(layouts() == 5)
    withSQLConf(BloomConf.VacuumRetentionCheck -> "false") {
      val out = spark.sql(s"VACUUM BLOOM INDEX ix ON ${table(dir)} RETAIN 0 HOURS").collect()
      assert(out.head.getLong(1) == 4, out.toSeq)
    }
    val d = describe(dir)
    assert(d("Versions Kept") == "1" && d("Files Not Covered") == "0" && d("Problems") == "none", d)
    assert(d("Commit Safety") == "atomic (local file system: hard link)", d)
    assert(layouts() == 1, "the removed versions' layouts are gone; their segments, still read, stay")
    lookups(dir, Seq(20250L, 500L))
    intercept[Exception](spark.sql(s"VACUUM BLOOM INDEX ix ON ${table(dir)} RETAIN -1 HOURS"))
    intercept[Exception](spark.sql(s"VACUUM BLOOM INDEX nope ON ${table(dir)}"))
  }

  test("a lookup that reads files a maintained index does not cover catches the index up in the background") {
    val dir = tempDir("catchup") + "/t"
    rows(0, 400, 4).write.parquet(dir)
    spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
    spark.sql(s"CREATE BLOOM INDEX off ON ${table(dir)} (id) OPTIONS (maintain_on_write = false)")
    // written as another engine would write it: the index is not told
    withSQLConf(BloomConf.MaintainOnWrite -> "false") { rows(1000, 1200, 2).write.mode("append").parquet(dir) }
    def lookup() = compare(spark.read.parquet(dir).where(col("s") === "k1100"))
    // refreshOnRead off: the lookup reads the new files and the index stays as it was
    val off = lookup()
    assert(off.on == off.off && off.on.size == 1 && off.skipping.map(_.filesNotCovered).sum == 2, off.skipping)
    assert(BackgroundMaintenance.await(spark, 60000))
    assert(describe(dir)("Files Not Covered") == "2")
    withSQLConf(BloomConf.RefreshOnRead -> "true") {
      val first = lookup()
      assert(first.on == first.off && first.on.size == 1 && first.skipping.map(_.filesNotCovered).sum == 2)
      assert(BackgroundMaintenance.await(spark, 60000), "the queued refresh ran")
      assert(describe(dir)("Files Not Covered") == "0", "the maintained index caught up")
      assert(describe(dir, "off")("Files Not Covered") == "2", "the opted-out index is left to REFRESH")
      val next = lookup()
      assert(next.on == next.off && next.on.size == 1 && next.kept == 1, next.skipping)
      assert(next.skipping.map(_.filesNotCovered).sum == 0, next.skipping)
      lookups(dir, Seq(1100L, 150L))
    }
  }

  test("a lookup's background catch-up runs with the settings of the session that looked up") {
    val dir = tempDir("catchup-session") + "/t"
    // Session b keeps its indexes under a root of its own; the session that registered the background listener
    // (this suite's) would not find them there.
    val b = spark.newSession()
    b.conf.set(BloomConf.IndexRoot, tempDir("index-root"))
    b.conf.set(BloomConf.RefreshOnRead, "true")
    rows(0, 400, 4).write.parquet(dir)
    b.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
    // written by a session whose index root holds no index of the table: b's index is not told
    rows(1000, 1200, 2).write.mode("append").parquet(dir)
    def uncovered() = BloomIndexes.describe(b, sparkbloom.index.TableRef.Path(dir), "ix").filesNotCovered
    assert(uncovered() == 2)
    val lookup = b.read.parquet(dir).where(col("s") === "k1100").collect().toSeq
    assert(BackgroundMaintenance.await(b, 60000), "the queued refresh ran")
    assert(uncovered() == 0, "b's index caught up, found under b's index root")
    b.conf.set(BloomConf.Enabled, "false")
    assert(lookup == b.read.parquet(dir).where(col("s") === "k1100").collect().toSeq && lookup.size == 1)
  }

  test("Spark's streaming file sink: each micro-batch's files are indexed after it commits") {
    implicit val ctx: org.apache.spark.sql.SQLContext = spark.sqlContext
    import spark.implicits._
    val dir = tempDir("sink") + "/t"
    val input = MemoryStream[Long]
    val frame = input.toDF().select(col("value").as("id"), concat(lit("k"), col("value")).as("s"))
    input.addData(0L until 50L)
    val query = frame.writeStream.format("parquet").option("checkpointLocation", dir + "_checkpoint").start(dir)
    try {
      query.processAllAvailable()
      spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
      for (batch <- 1 to 3) {
        input.addData((batch * 1000L) until (batch * 1000L + 50))
        query.processAllAvailable()
      }
    } finally query.stop()
    // the refresh follows each batch's progress event: wait for it (a wait that runs out fails below)
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (describe(dir)("Files Not Covered") != "0" && System.nanoTime() < deadline) {
      BackgroundMaintenance.await(spark, 5000)
      Thread.sleep(200)
    }
    val d = describe(dir)
    assert(d("Files Not Covered") == "0" && d("Files In Table") == d("Files Covered"), d)
    assert(d("Files In Table").toInt >= 4, d)
    lookups(dir, Seq(2010L, 3049L, 10L))
    val o = compare(spark.read.parquet(dir).where(col("s") === "k2010"))
    assert(o.on == o.off && o.on.size == 1 && o.skipped >= 3, o.skipping)
  }

  private def uncovered(dir: String): Int = describe(dir)("Files Not Covered").toInt

  /** A file-sink stream into an indexed table, one file per batch: the uncovered files after each of 4 batches. */
  private def stream(name: String, waitTimeout: String): (String, Seq[Int]) = {
    implicit val ctx: org.apache.spark.sql.SQLContext = spark.sqlContext
    import spark.implicits._
    val dir = tempDir(name) + "/t"
    val input = MemoryStream[Long]
    val frame = input.toDF().select(col("value").as("id"), concat(lit("k"), col("value")).as("s")).coalesce(1)
    input.addData(0L until 50L)
    spark.conf.set(BloomConf.StreamingWaitTimeout, waitTimeout) // the stream's session is a copy of its settings
    val query = frame.writeStream.format("parquet").option("checkpointLocation", dir + "_checkpoint").start(dir)
    try {
      query.processAllAvailable()
      spark.sql(s"CREATE BLOOM INDEX ix ON ${table(dir)} (id, s)")
      val after = for (batch <- 1 to 4) yield {
        input.addData((batch * 1000L) until (batch * 1000L + 50))
        query.processAllAvailable()
        uncovered(dir)
      }
      (dir, after)
    } finally query.stop()
  }

  /**
   * Runs `body` with the background refreshes held back until it releases the latch it is given (or it ends); the
   * refresh hook and the wait timeout are reset afterwards.
   */
  private def withRefreshesHeld(body: java.util.concurrent.CountDownLatch => Unit): Unit = {
    val blocked = new java.util.concurrent.CountDownLatch(1)
    try {
      BackgroundMaintenance.beforeRefresh = () => blocked.await()
      body(blocked)
    } finally {
      blocked.countDown()
      BackgroundMaintenance.beforeRefresh = () => ()
      spark.conf.unset(BloomConf.StreamingWaitTimeout)
    }
  }

  test("a streaming query waits before each micro-batch for the refresh of the batch before: at most one uncovered") {
    withRefreshesHeld { blocked =>
      // not waiting, the refreshes held back: every batch stays uncovered
      val (free, freeAfter) = stream("sink-not-waiting", "0")
      assert(freeAfter.last >= 3, freeAfter)
      blocked.countDown()
      assert(BackgroundMaintenance.await(spark, 60000))
      // waiting (the default), refreshes slower than the batches: the batch before is covered when one commits
      BackgroundMaintenance.beforeRefresh = () => Thread.sleep(700)
      val (waited, waitedAfter) = stream("sink-waiting", "120s")
      assert(waitedAfter.drop(1).forall(_ <= 1), waitedAfter)
      assert(BackgroundMaintenance.await(spark, 60000))
      for (dir <- Seq(free, waited)) {
        assert(uncovered(dir) == 0, describe(dir))
        lookups(dir, Seq(2010L, 4049L, 10L))
      }
    }
  }

  test("a streaming batch whose refresh does not come within the wait timeout goes on without it") {
    withRefreshesHeld { blocked =>
      // every refresh held back: each batch waits out 1 s for the one before, then commits anyway
      val timedOut = StreamingCatchUp.waitsTimedOut.get()
      val (dir, after) = stream("sink-timing-out", "1s")
      assert(StreamingCatchUp.waitsTimedOut.get() - timedOut >= 3, after)
      assert(after.last >= 3, after) // every batch committed, none covered yet
      blocked.countDown()
      assert(BackgroundMaintenance.await(spark, 60000))
      assert(uncovered(dir) == 0, describe(dir))
      lookups(dir, Seq(2010L, 4049L, 10L))
    }
  }
}
