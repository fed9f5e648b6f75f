package sparkbloom.index

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.testing.SparkSessionSuite

/**
 * Maintenance on write: Spark's Parquet writes into an indexed table leave no file uncovered when they return, and
 * lookups of the new rows read only their files, with the rows of the same query without sparkbloom.
 */
class MaintainOnWriteSuite extends SparkSessionSuite {
  override protected def sparkConf: Map[String, String] =
    Map("spark.sql.shuffle.partitions" -> "2", BloomConf.MaintainOnWrite -> "true")

  private def rows(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).select(col("id"), concat(lit("k"), col("id")).as("s"), (col("id") % 3).as("p"))

  private def indexed(dir: String): Unit =
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)

  private def withTable(name: String)(f: => Unit): Unit =
    try f
    finally spark.sql(s"DROP TABLE IF EXISTS $name")

  private def describe(table: TableRef): IndexDescription = BloomIndexes.describe(spark, table, "ix")

  /** A lookup of `key` reads `files` files, with the rows of the same query with sparkbloom off. */
  private def lookup(df: => DataFrame, key: Long, files: Long): Unit = {
    for (pred <- Seq(col("id") === key, col("s") === s"k$key")) {
      val o = compare(df.where(pred))
      assert(o.on == o.off && o.on.size == 1, s"$pred: on ${o.on}, off ${o.off}")
      assert(o.kept == files, s"$pred: ${o.skipping}")
    }
  }

  test("DataFrame appends to a path table, partitioned or not, are covered when the write returns") {
    for (partitioned <- Seq(false, true)) {
      val dir = tempDir("mow") + "/t"
      def write(df: DataFrame, mode: String): Unit =
        (if (partitioned) df.write.partitionBy("p") else df.write).mode(mode).parquet(dir)
      write(rows(0, 400, 4), "overwrite")
      indexed(dir)
      val before = describe(TableRef.Path(dir))
      write(rows(1000, 1200, 2), "append")
      val after = describe(TableRef.Path(dir))
      assert(after.filesNotCovered == 0 && after.filesCovered > before.filesCovered, after)
      assert(after.version == before.version + 1)
      lookup(spark.read.parquet(dir), 1105, files = 1)
      lookup(spark.read.parquet(dir), 205, files = 1)
      // An overwrite deletes the directory, the index with it: made again, over the new files only.
      write(rows(3000, 3300, 3), "overwrite")
      val again = describe(TableRef.Path(dir))
      assert(again.filesNotCovered == 0 && again.filesDeleted == 0 && again.version == 1, again)
      lookup(spark.read.parquet(dir), 3150, files = 1)
      val old = compare(spark.read.parquet(dir).where(col("id") === 1105))
      assert(old.on.isEmpty && old.off.isEmpty && old.kept == 0, old.skipping)
    }
  }

  /**
   * A lookup of `key` in the marked-index test: the rows of sparkbloom off, the file holding the key read. (Which other
   * files a filter's false positives keep depends on the sizing of the refresh; that is not what the test is about.)
   */
  private def answered(dir: String, key: Long): Unit =
    for (pred <- Seq(col("id") === key, col("s") === s"k$key")) {
      val o = compare(spark.read.parquet(dir).where(pred))
      assert(o.on == o.off && o.on.size == 1, s"$pred: on ${o.on}, off ${o.off}")
      assert(o.kept >= 1 && o.kept < 7, s"$pred: ${o.skipping}")
    }

  test("an index marked as having missed a write is refreshed by the next write, not given only that write's files") {
    val dir = tempDir("mow") + "/t"
    rows(0, 400, 4).write.parquet(dir)
    indexed(dir)
    // a write the index missed (as when its update failed after the write committed: MaintainOnWrite marks it)
    withSQLConf(BloomConf.MaintainOnWrite -> "false")(rows(1000, 1200, 2).write.mode("append").parquet(dir))
    val ixDir = new org.apache.hadoop.fs.Path(IndexStore.indexesDir(new org.apache.hadoop.fs.Path(dir), None), "ix")
    IndexManager.markNeedsRefresh(spark, ixDir)
    val marker = new java.io.File(ixDir.toUri.getPath, "_needs_refresh")
    assert(marker.exists && describe(TableRef.Path(dir)).filesNotCovered == 2)
    rows(2000, 2100, 1).write.mode("append").parquet(dir)
    // the next write's commit saw the mark: the index was refreshed from the listing, the missed files too
    val d = describe(TableRef.Path(dir))
    assert(d.filesNotCovered == 0 && d.filesCovered == 7, d)
    assert(!marker.exists, "the refresh clears the mark")
    answered(dir, 1105)
    answered(dir, 2050)
    // unmarked, a write takes its own files only (its tasks' entries): a missed write's files stay uncovered
    withSQLConf(BloomConf.MaintainOnWrite -> "false")(rows(3000, 3100, 1).write.mode("append").parquet(dir))
    rows(4000, 4100, 1).write.mode("append").parquet(dir)
    assert(describe(TableRef.Path(dir)).filesNotCovered == 1)
    answered(dir, 3050)
  }

  test("INSERT INTO a catalog table is covered; INSERT OVERWRITE keeps the index, over the new files only") {
    withTable("mow_t") {
      spark.sql("CREATE TABLE mow_t (id BIGINT, s STRING) USING parquet")
      spark.sql("INSERT INTO mow_t SELECT id, concat('k', id) FROM range(0, 300, 1, 3)")
      BloomIndexes.create(spark, TableRef.Catalog("mow_t"), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
        ifNotExists = false)
      spark.sql("INSERT INTO mow_t SELECT id, concat('k', id) FROM range(5000, 5100, 1, 1)")
      val d = describe(TableRef.Catalog("mow_t"))
      assert(d.filesNotCovered == 0 && d.filesDeleted == 0, d)
      lookup(spark.table("mow_t"), 5050, files = 1)
      // INSERT OVERWRITE deletes the table's directory, the index with it: the index is made again over the new files.
      spark.sql("INSERT OVERWRITE mow_t SELECT id, concat('k', id) FROM range(7000, 7200, 1, 2)")
      val again = describe(TableRef.Catalog("mow_t"))
      assert(again.filesCovered == 2 && again.filesNotCovered == 0 && again.filesDeleted == 0, again)
      assert(again.columns.map(_.name) == Seq("id", "s") && again.falseReadsPerKey == d.falseReadsPerKey, again)
      lookup(spark.table("mow_t"), 7100, files = 1)
      val o = compare(spark.table("mow_t").where(col("id") === 7100))
      assert(o.on == o.off && o.on.size == 1)
      val gone = compare(spark.table("mow_t").where(col("id") === 50))
      assert(gone.on.isEmpty && gone.off.isEmpty)
    }
  }

  test("off by configuration: the appended files are read, uncovered, until REFRESH") {
    val dir = tempDir("mow") + "/t"
    rows(0, 400, 4).write.parquet(dir)
    indexed(dir)
    withSQLConf(BloomConf.MaintainOnWrite -> "false") { rows(1000, 1100, 2).write.mode("append").parquet(dir) }
    assert(describe(TableRef.Path(dir)).filesNotCovered == 2)
    lookup(spark.read.parquet(dir), 1050, files = 2) // both new files are read, uncovered
  }

  test("a failure to index never fails the write: its files stay uncovered, and the next write covers them") {
    val dir = tempDir("mow") + "/t"
    rows(0, 400, 4).write.parquet(dir)
    indexed(dir)
    // A setting the index build refuses makes the update fail after the write committed.
    withSQLConf(BloomConf.MaxBitsPerValue -> "not-a-number") { rows(1000, 1100, 2).write.mode("append").parquet(dir) }
    assert(spark.read.parquet(dir).count() == 500)
    assert(describe(TableRef.Path(dir)).filesNotCovered == 2)
    lookup(spark.read.parquet(dir), 1050, files = 2)
    rows(2000, 2100, 1).write.mode("append").parquet(dir)
    assert(describe(TableRef.Path(dir)).filesNotCovered == 0)
    lookup(spark.read.parquet(dir), 1050, files = 1)
  }

  /** Per new file, the columns whose chunks carry a Parquet bloom filter (written by parquet-java). */
  private def nativeFilterColumns(dir: String, newerThan: Set[String]): Seq[Set[String]] = {
    import scala.jdk.CollectionConverters._
    val conf = spark.sessionState.newHadoopConf()
    new java.io.File(dir).listFiles().toSeq.map(_.getPath).filter(p => p.endsWith(".parquet") && !newerThan(p)).map {
      p =>
        val r = org.apache.parquet.hadoop.ParquetFileReader.open(
          org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(p), conf))
        try r.getFooter.getBlocks.asScala.flatMap(_.getColumns.asScala)
            .filter(_.getBloomFilterOffset >= 0).map(_.getPath.toDotString).toSet
        finally r.close()
    }
  }

  test("the write's files carry parquet-java's bloom filters on the indexed columns, which the index harvests " +
    "instead of reading the columns again; spark.sparkbloom.maintainOnWrite.nativeFilters=false writes none") {
    spark.conf.set(BloomConf.MaintainInTask, "false")
    try nativeFiltersTest()
    finally spark.conf.unset(BloomConf.MaintainInTask)
  }

  private def nativeFiltersTest(): Unit = {
    val dir = tempDir("mow") + "/t"
    rows(0, 400, 4).write.parquet(dir)
    indexed(dir)
    def files: Set[String] = new java.io.File(dir).listFiles().map(_.getPath).toSet
    val before = describe(TableRef.Path(dir))
    val old = files
    rows(1000, 1300, 3).write.mode("append").parquet(dir)
    assert(nativeFilterColumns(dir, old) == Seq.fill(3)(Set("id", "s")), "id and s, not p")
    val after = describe(TableRef.Path(dir))
    assert(after.filesNotCovered == 0, after)
    assert(after.filtersHarvested == before.filtersHarvested + 3 * 2 && after.filtersScanned == before.filtersScanned,
      s"$before -> $after")
    lookup(spark.read.parquet(dir), 1150, files = 1)
    lookup(spark.read.parquet(dir), 150, files = 1)
    val absent = compare(spark.read.parquet(dir).where(col("id") === 999999L))
    assert(absent.on.isEmpty && absent.off.isEmpty && absent.kept <= 1, absent.skipping)
    // off: the files are written as without sparkbloom, and the refresh reads their columns
    val old2 = files
    // A few small files are read on the driver, without a Spark job queued behind the application's; more than 16
    // in a Spark job.
    val jobs = indexJobsDuring(withSQLConf(BloomConf.MaintainWithNativeFilters -> "false") {
      rows(2000, 2200, 2).write.mode("append").parquet(dir)
    })
    assert(jobs == 0, "2 small files scanned on the driver")
    assert(nativeFilterColumns(dir, old2) == Seq.fill(2)(Set.empty[String]))
    val off = describe(TableRef.Path(dir))
    assert(off.filesNotCovered == 0 && off.filtersScanned == after.filtersScanned + 2 * 2, off)
    lookup(spark.read.parquet(dir), 2100, files = 1)
    val many = indexJobsDuring(withSQLConf(BloomConf.MaintainWithNativeFilters -> "false") {
      rows(4000, 4170, 17).write.mode("append").parquet(dir)
    })
    assert(many >= 1, "17 files scanned in a Spark job")
    assert(describe(TableRef.Path(dir)).filesNotCovered == 0)
    lookup(spark.read.parquet(dir), 4100, files = 1)
    // a user's own bloom filter settings for the write are kept
    val old3 = files
    rows(3000, 3100, 1).write.option("parquet.bloom.filter.enabled#id", "false").mode("append").parquet(dir)
    assert(nativeFilterColumns(dir, old3) == Seq(Set("s")))
    lookup(spark.read.parquet(dir), 3050, files = 1)
  }

  /**
   * The Spark jobs sparkbloom ran to index files while `f` ran. A marker job after `f` is waited for: the listener
   * hears jobs in the order they started, so every job of `f` has been heard by then.
   */
  private def indexJobsDuring(f: => Unit): Int = {
    val seen = new java.util.concurrent.atomic.AtomicInteger()
    val marked = new java.util.concurrent.CountDownLatch(1)
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onJobStart(e: org.apache.spark.scheduler.SparkListenerJobStart): Unit =
        Option(e.properties).flatMap(p => Option(p.getProperty("spark.job.description"))) match {
          case Some(d) if d.startsWith("sparkbloom: index") => seen.incrementAndGet()
          case Some("indexJobsDuring: marker") => marked.countDown()
          case _ =>
        }
    }
    spark.sparkContext.addSparkListener(listener)
    try {
      f
      spark.sparkContext.setJobDescription("indexJobsDuring: marker")
      try spark.sparkContext.parallelize(Seq(1), 1).count()
      finally spark.sparkContext.setJobDescription(null)
      assert(marked.await(60, java.util.concurrent.TimeUnit.SECONDS), "the marker job was heard")
      seen.get
    } finally spark.sparkContext.removeSparkListener(listener)
  }

  private def loaded(dir: String, name: String): IndexVersion = StoredIndex.loaded(spark, dir, name)

  private def filterBytes(v: IndexVersion, column: String, rg: Int): Array[Byte] =
    StoredIndex.filterBytes(v, column, rg)

  /** Column chunks this JVM has read to index them (local mode: the tasks' too). */
  private def chunksRead: Long = {
    import sparkbloom.parquet.ChunkHasher.Counters
    Counters.reader.get + Counters.dictionary.get + Counters.plain.get
  }

  /** Rows of every type the write tasks hash, with nulls (every 7th id, every 5th binary). */
  private def typed(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).select(when(col("id") % 7 =!= 0, col("id")).as("id"),
      concat(lit("k"), col("id")).as("s"), (col("id") * 3).cast("int").as("i"),
      (col("id") % 1000).cast("smallint").as("sh"), (col("id") % 100).cast("tinyint").as("b"),
      when(col("id") % 5 =!= 0, concat(lit("b"), col("id")).cast("binary")).as("bin"), (col("id") % 3).as("p"))

  test("an append is indexed by its own write tasks: the filters a build makes, bit for bit, for every type the " +
    "tasks hash, with nulls and several row groups per file, partitioned or not; no file is read again") {
    val cols = Seq("id", "s", "i", "sh", "b", "bin")
    for (partitioned <- Seq(false, true)) {
      val dir = tempDir("mow") + "/t"
      def write(df: DataFrame, mode: String): Unit =
        (if (partitioned) df.write.partitionBy("p") else df.write).option("parquet.block.size", "8192").mode(mode)
          .parquet(dir)
      write(typed(0, 3000, 3), "overwrite")
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", cols.map(ColumnSpec(_)), Map("fpp" -> "0.01"),
        ifNotExists = false)
      val before = describe(TableRef.Path(dir))
      val read = chunksRead
      write(typed(10000, 16000, 3), "append")
      assert(chunksRead == read, "no column chunk was read after the write")
      val after = describe(TableRef.Path(dir))
      assert(after.filesNotCovered == 0 && after.version == before.version + 1, after)
      assert(after.filtersHarvested == before.filtersHarvested, "nothing harvested: the files carry no filters")
      val grown = loaded(dir, "ix").layout
      assert(grown.numRowGroups > grown.numFiles, "several row groups per file")
      // A build over the same files with the same sizing makes the same filters.
      BloomIndexes.create(spark, TableRef.Path(dir), "ref", cols.map(ColumnSpec(_)), Map("fpp" -> "0.01"),
        ifNotExists = false)
      val (x, y) = (loaded(dir, "ix"), loaded(dir, "ref"))
      assert(x.layout.paths.toSeq == y.layout.paths.toSeq)
      for (c <- cols; rg <- 0 until x.layout.numRowGroups) {
        val (cx, cy) = (x.layout.column(c).get, y.layout.column(c).get)
        val what = s"$c, row group $rg"
        assert(cx.nonNull(rg) == cy.nonNull(rg) && cx.ndv(rg) == cy.ndv(rg) && cx.flags(rg) == cy.flags(rg), what)
        assert(cx.fpp(rg) == cy.fpp(rg) && cx.source(rg) == cy.source(rg), what)
        assert(cx.encodings(cx.encoding(rg)) == cy.encodings(cy.encoding(rg)), what)
        assert(java.util.Arrays.equals(filterBytes(x, c, rg), filterBytes(y, c, rg)), s"$what: filter bytes differ")
      }
      val t = spark.read.parquet(dir)
      for (pred <- Seq(col("id") === 12345L, col("s") === "k12345", col("i") === 12345 * 3, col("sh") === 345,
          col("b") === 45, col("bin") === lit("b12346").cast("binary"), col("id") === 12348L, col("id") === 99999999L,
          col("s") === "absent")) {
        val o = compare(t.where(pred))
        assert(o.on == o.off, s"$pred: ${o.skipping}")
      }
    }
  }

  test("an append under the table budget gets summaries for its segments, sized for the table twice its size") {
    val dir = tempDir("mow") + "/t"
    rows(0, 4000, 4).write.parquet(dir)
    indexed(dir)
    val read = chunksRead
    rows(10000, 13000, 3).write.mode("append").parquet(dir)
    assert(chunksRead == read, "no column chunk was read after the write")
    val v = loaded(dir, "ix")
    assert(describe(TableRef.Path(dir)).filesNotCovered == 0)
    val newFiles = v.layout.paths.indices.filter(i => v.layout.sizes(i) > 0 && !v.meta.dataDir.isEmpty)
    val c = v.layout.column("id").get
    val segmentsOfNew = v.layout.segments.indices.filter(s => v.layout.segments(s).file.startsWith(v.meta.dataDir))
    assert(segmentsOfNew.nonEmpty && newFiles.nonEmpty)
    assert(segmentsOfNew.forall(s => v.layout.summaries.summaryOf(s) >= 0), "every new segment has a summary")
    lookup(spark.read.parquet(dir), 11500, files = 1)
    lookup(spark.read.parquet(dir), 1500, files = 1)
    // The write's row groups get the budget share of a table of twice the values (8,000 ids: the floor, 10^6).
    val rg = (0 until v.layout.numRowGroups).find(r =>
      v.layout.rgRows(r) == 1000 && c.segment(r) >= 0 &&
        v.layout.segments(c.segment(r)).file.startsWith(v.meta.dataDir)).get
    assert(c.fpp(rg) <= 2 * 0.1 * 1000 / IndexManager.WriteProjectionFloor, c.fpp(rg))
  }

  test("a table with no index is written as before, and a write that is not Parquet is left alone") {
    val dir = tempDir("mow") + "/t"
    rows(0, 100, 2).write.parquet(dir)
    rows(100, 200, 1).write.mode("append").parquet(dir)
    assert(BloomIndexes.list(spark, TableRef.Path(dir)).isEmpty)
    val json = tempDir("mow") + "/j"
    rows(0, 10, 1).write.json(json)
    rows(10, 20, 1).write.mode("append").json(json)
    assert(spark.read.json(json).count() == 20)
  }

  test("superseded commits leave _commits/ after spark.sparkbloom.index.commitRetention; the newest 10 always stay") {
    def commitsAfterAppends(retention: String): (String, Seq[Long], Long) = withSQLConf(BloomConf.CommitRetention ->
      retention) {
      val dir = tempDir("mow") + "/t"
      rows(0, 300, 3).write.parquet(dir)
      indexed(dir)
      for (i <- 0 until 17) rows(1000 + 100 * i, 1100 + 100 * i, 1).write.mode("append").parquet(dir)
      val ixDir = new org.apache.hadoop.fs.Path(dir + "/_sparkbloom/ix")
      val fs = ixDir.getFileSystem(spark.sessionState.newHadoopConf())
      (dir, IndexStore.versions(fs, ixDir), describe(TableRef.Path(dir)).version)
    }
    // an hour: nothing removed in a test's minutes (CREATE and 17 appends: 18 commits)
    val (_, kept, newest) = commitsAfterAppends("1h")
    assert(kept.size == newest && newest == 18, kept)
    // at once: the housekeeping of the 8th and 16th commits (and of any build) leaves the newest 10 and those after
    val (dir, pruned, newestPruned) = commitsAfterAppends("0s")
    assert(pruned.head == newestPruned && pruned == (newestPruned to (newestPruned - pruned.size + 1) by -1), pruned)
    assert(pruned.size >= IndexManager.CommitsAlwaysKept && pruned.size < newestPruned, pruned)
    // a writer whose view is older than the removed commits cannot publish a removed number again: the version
    // before it is gone too (removed oldest first), which the commit checks; the next version's check passes
    val ixDir = new org.apache.hadoop.fs.Path(dir + "/_sparkbloom/ix")
    val fs = ixDir.getFileSystem(spark.sessionState.newHadoopConf())
    assert(!IndexStore.previousCommitted(fs, ixDir, pruned.last - 1))
    assert(IndexStore.previousCommitted(fs, ixDir, newestPruned + 1))
    val d = describe(TableRef.Path(dir))
    assert(d.problems.isEmpty && d.filesNotCovered == 0, d)
    lookup(spark.read.parquet(dir), 1250, files = 1)
    lookup(spark.read.parquet(dir), 2650, files = 1)
    lookup(spark.read.parquet(dir), 150, files = 1)
  }

  test("which commits housekeeping removes: the oldest beyond the newest 10, superseded at least the retention ago") {
    val now = 1000000L
    // versions 15..1, each committed a second after the one before; version 15 a second before `now`
    val commits = (15L to 1L by -1).map(v => v -> (now - (16 - v) * 1000))
    assert(IndexManager.expiredCommits(commits, 0L, now) == Seq(1L, 2L, 3L, 4L, 5L))
    // version 5 was superseded (version 6 committed) 10 s before now, version 4 11 s before
    assert(IndexManager.expiredCommits(commits, 10500L, now) == Seq(1L, 2L, 3L, 4L))
    assert(IndexManager.expiredCommits(commits, 1000000L, now).isEmpty)
    assert(IndexManager.expiredCommits(commits, -1L, now).isEmpty)
    assert(IndexManager.expiredCommits(commits.take(10), 0L, now).isEmpty)
    // version 4's time not given by the store: version 3, which it superseded, stays, and the ones after it
    val unknown = commits.map { case (v, t) => v -> (if (v == 4L) 0L else t) }
    assert(IndexManager.expiredCommits(unknown, 0L, now) == Seq(1L, 2L))
  }
}
