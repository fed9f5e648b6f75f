package sparkbloom.index

import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.index.sliced.IndexCache
import sparkbloom.testing.SparkSessionSuite

/**
 * The block-sliced index: what a lookup reads, the cache bound and the distributed probe, and REFRESH reusing the
 * previous version's segments. Every answer is compared
 * with the index switched off.
 */
class SlicedIndexSuite extends SparkSessionSuite {
  private lazy val table: String = {
    val dir = tempDir("sliced") + "/t"
    spark.range(0, 40000, 1, 40).select(col("id"), concat(lit("u-"), col("id")).as("s")).write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)
    dir
  }
  private def version(dir: String): IndexVersion = {
    val conf = spark.sessionState.newHadoopConf()
    val idx = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), "ix")
    val fs = idx.getFileSystem(conf)
    IndexStore.load(fs, conf, idx, IndexStore.latestMeta(fs, idx)._1.get)
  }

  test("a point lookup reads one run per summary segment of the column, then the runs of the segments whose " +
    "summary may hold the value, and nothing once the runs are cached") {
    IndexCache.clear()
    val l = version(table).layout
    val segs = l.segments.indices.filter(s => l.segments(s).column == "id")
    val sums = segs.map(l.summaries.summaryOf).distinct
    assert(segs.size > 1 && segs.forall(s => l.summaries.summaryOf(s) >= 0), "every scanned segment has a summary")
    // the segment holding the row group of id 12345
    val file = spark.read.parquet(table).where(col("id") === 12345L).select(input_file_name()).head().getString(0)
    val holding = l.column("id").get.segment(l.firstRg(l.paths.indexWhere(p => file.endsWith(p.split('/').last))))
    assert(holding >= 0, file)
    IndexCache.clear()
    val cold = compare(spark.read.parquet(table).where(col("id") === 12345L))
    assert(cold.on == cold.off && cold.on.size == 1 && cold.filesRead == 1)
    val summaryBytes = sums.map(t => l.summaries.segments(t).runBytes.toLong).sum
    val read = cold.skipping.head.indexBytesRead
    assert(read >= summaryBytes + l.segments(holding).runBytes, s"${cold.skipping.head}")
    // the other segments' runs are read only where their summary says "maybe" (10% each at most)
    val others = segs.filter(_ != holding).map(s => l.segments(s).runBytes.toLong)
    assert(read < summaryBytes + l.segments(holding).runBytes + others.sum, s"${cold.skipping.head} vs $others")
    val warm = compare(spark.read.parquet(table).where(col("id") === 12345L))
    assert(warm.on == warm.off && warm.skipping.head.indexBytesRead == 0)
  }

  test("an IN list reads at most one run per value and segment and keeps exactly the files holding the keys") {
    IndexCache.clear()
    val keys = (0 until 25).map(i => i * 1601L)
    val o = compare(spark.read.parquet(table).where(col("id").isin(keys: _*) || col("s") === "u-39999"))
    assert(o.on == o.off && o.on.size == 26)
    val holding = o.off.map(_.getLong(0) / 1000).distinct.size
    assert(o.skipping.head.filesKept >= holding && o.skipping.head.filesKept <= holding + 1, o.skipping.head)
  }

  test(
    "a lookup whose runs do not fit spark.sparkbloom.cache.maxBytes is probed by a Spark job, with the same answer") {
    val local = compare(spark.read.parquet(table).where(col("s").isin("u-5", "u-20001", "nope")))
    spark.conf.set("spark.sparkbloom.cache.maxBytes", "64")
    try {
      IndexCache.clear()
      val o = compare(spark.read.parquet(table).where(col("s").isin("u-5", "u-20001", "nope")))
      assert(o.on == o.off && o.on.size == 2)
      assert(o.skipping.head.distributedProbe, o.skipping.head)
      assert(o.skipping.head.filesKept == local.skipping.head.filesKept)
      assert(IndexCache.usedBytes <= 64)
    } finally { spark.conf.unset("spark.sparkbloom.cache.maxBytes"); IndexCache.clear() }
    assert(!local.skipping.head.distributedProbe)
  }

  test("REFRESH INCREMENTAL writes segments only for new files and keeps reading the old ones") {
    // Files the index does not know: written as another engine would (no maintenance on write).
    withSQLConf(BloomConf.MaintainOnWrite -> "false") {
      val dir = tempDir("inc") + "/t"
      spark.range(0, 2000, 1, 4).select(col("id"), concat(lit("u-"), col("id")).as("s")).write.parquet(dir)
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
      val v1 = version(dir)
      spark.range(9000, 9500, 1, 1).select(col("id"), concat(lit("u-"), col("id")).as("s")).write.mode(
        "append").parquet(
        dir)
      BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
      val v2 = version(dir)
      assert(v1.layout.segments.map(_.file).toSet.subsetOf(v2.layout.segments.map(_.file).toSet))
      assert(v2.layout.segments.exists(_.file.startsWith(v2.meta.dataDir + "/")))
      assert(v2.meta.referencedDirs.get.toSet == Set(v1.meta.dataDir, v2.meta.dataDir))
      for (k <- Seq(5L, 1999L, 9001L, 9499L, 7000L)) {
        val o = compare(spark.read.parquet(dir).where(col("id") === k))
        assert(o.on == o.off, s"key $k")
        assert(o.filesRead <= (if (o.on.isEmpty) 1 else 2), s"key $k read ${o.filesRead} files")
      }
    }
  }

  test("an index whose layout sparkbloom 0.1 wrote (format 1, one level) is read as before, DESCRIBE says how to " +
    "upgrade it, REFRESH INCREMENTAL keeps its segments as they are and REFRESH FULL adds the summaries") {
    withSQLConf(BloomConf.MaintainOnWrite -> "false") {
      val dir = tempDir("format1") + "/t"
      spark.range(0, 4000, 1, 8).select(col("id"), concat(lit("u-"), col("id")).as("s")).write.parquet(dir)
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
      // The version rewritten as 0.1 wrote it: layout format 1, no summaries (the summary files then unused).
      val v = version(dir)
      val l = v.layout
      val flat = new sliced.Layout(l.paths, l.sizes, l.mtimes, l.firstRg, l.rgOrdinal, l.rgStart, l.rgEnd, l.rgRows,
        l.columns, l.segments)
      val layoutPath = new java.io.File(new java.io.File(new java.net.URI(v.dir.toString)),
        v.meta.dataDir + "/" +
          IndexStore.LayoutFile)
      java.nio.file.Files.write(layoutPath.toPath, sliced.LayoutCodec.encodeV1(flat))
      // ... and its commit as 0.1 wrote it: without the layout's length
      val commit =
        new java.io.File(new java.io.File(new java.net.URI(v.dir.toString)), s"_commits/${v.meta.version}.json")
      java.nio.file.Files.write(commit.toPath, IndexStore.mapper.writeValueAsBytes(v.meta.copy(layoutBytes = None)))
      l.summaries.segments.foreach(t => new java.io.File(layoutPath.getParentFile, t.file.split('/').last).delete())
      IndexStore.invalidate(v.dir); IndexCache.clear()
      val old = version(dir)
      assert(old.layout.format == 1 && old.layout.summaries.isEmpty && old.problems.isEmpty, old.problems)
      val d = BloomIndexes.describe(spark, TableRef.Path(dir), "ix")
      assert(d.levels.contains("REFRESH ... FULL adds segment summaries"), d.levels)
      for (k <- Seq(5L, 3999L, 7777L)) {
        val o = compare(spark.read.parquet(dir).where(col("id") === k))
        assert(o.on == o.off && o.filesRead <= 1, s"key $k")
      }
      spark.range(9000, 9500, 1, 1).select(col("id"), concat(lit("u-"), col("id")).as("s")).write.mode("append")
        .parquet(dir)
      BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
      val inc = version(dir)
      assert(inc.layout.format == 2)
      val carried = inc.layout.segments.indices.filter(s => old.layout.segments.contains(inc.layout.segments(s)))
      assert(carried.nonEmpty && carried.forall(s => inc.layout.summaries.summaryOf(s) < 0))
      assert(
        inc.layout.segments.indices.filterNot(carried.contains).forall(s => inc.layout.summaries.summaryOf(s) >= 0))
      BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = true)
      val full = version(dir)
      assert(
        full.layout.format == 2 && full.layout.segments.indices.forall(s => full.layout.summaries.summaryOf(s) >= 0))
      assert(!BloomIndexes.describe(spark, TableRef.Path(dir), "ix").levels.contains("REFRESH"))
      for (k <- Seq(5L, 3999L, 9100L, 7777L)) {
        val o = compare(spark.read.parquet(dir).where(col("id") === k))
        assert(o.on == o.off && o.filesRead <= 1, s"key $k")
      }
    }
  }

  test(
    "two indexes on one table, covering different files: a row group is skipped only when every index covering it " +
      "says so") {
    val dir = tempDir("two") + "/t"
    spark.range(0, 8000, 1, 8).select(col("id"), concat(lit("u-"), col("id")).as("s")).write
      .option("parquet.block.size", 16384).parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "by_s", Seq(ColumnSpec("s")), Map.empty, ifNotExists = false)
    spark.range(8000, 9000, 1, 1).select(col("id"), concat(lit("u-"), col("id")).as("s")).write.mode("append").parquet(
      dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "by_id", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
    val queries =
      Seq( // (query, an index applies)
        (col("id") === 4321L && col("s") === "u-4321", true), // both indexes, same file
        (col("id") === 4321L && col("s") === "u-1234", true), // each index says yes to a different file: nothing
        (col("id") === 8500L || col("s") === "u-10", false), // neither index answers an OR across columns: all read
        (col("id") === 8500L && col("s") === "u-8500", true), // appended file: only by_id covers it
        (col("id").isin(5L, 7005L, 99999L), true))
    for ((q, applies) <- queries) {
      val o = compare(spark.read.parquet(dir).where(q))
      assert(o.on == o.off, q.toString)
      if (applies) assert(o.skipping.nonEmpty && o.skipping.head.index.contains("by_id"), s"$q: ${o.skipping}")
      else assert(o.skipping.forall(_.index.isEmpty), s"$q: ${o.skipping}") // no index applies (native filters may)
    }
    val both = compare(spark.read.parquet(dir).where(col("id") === 4321L && col("s") === "u-1234"))
    assert(both.on.isEmpty && both.skipping.head.filesKept <= 1, both.skipping.head)
    val inList = compare(spark.read.parquet(dir).where(col("id").isin(5L, 7005L, 99999L)))
    assert(inList.on.size == 2 && inList.skipping.head.filesKept <= 3, inList.skipping.head)
  }
}
