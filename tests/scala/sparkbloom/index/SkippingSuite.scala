package sparkbloom.index

import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.testing.SparkSessionSuite

class SkippingSuite extends SparkSessionSuite {

  private lazy val table: String = {
    val dir = tempDir("skip") + "/t"
    spark.range(0, 20000, 1, 20)
      .select(col("id"), concat(lit("user-"), col("id")).as("email"), (col("id") % 7).cast("int").as("bucket"),
        when(col("id") % 1000 === 0, lit(null)).otherwise(col("id") * 1.5).as("score"))
      .write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix",
      Seq(ColumnSpec("id"), ColumnSpec("email"), ColumnSpec("score")),
      Map.empty, ifNotExists = false)
    dir
  }
  private def df = spark.read.parquet(table)

  test("a point lookup of a present key reads one file and returns the same rows as without the index") {
    val o = compare(df.where(col("id") === 12345L))
    assert(o.on == o.off)
    assert(o.on.size == 1)
    assert(o.filesRead == 1)
    assert(o.skipping.head.filesTotal == 20 && o.skipping.head.filesKept == 1)
  }

  test("a lookup of an absent key reads no file") {
    val o = compare(df.where(col("email") === "nobody@example.com"))
    assert(o.on == o.off && o.on.isEmpty)
    assert(o.filesRead == 0)
  }

  test("IN, <=>, IS NULL and AND/OR combinations agree with the unindexed answer") {
    val queries = Seq(
      df.where(col("id").isin(1L, 5000L, 19999L, 123456789L)),
      df.where(col("id") <=> 77L),
      df.where(col("score").isNull),
      df.where(col("score") === 0.0),
      df.where(col("id") === 10L || col("email") === "user-15000"),
      df.where(col("id") === 10L && col("email") === "user-15000"),
      df.where(col("id") === 10L && col("bucket") === 3),
      df.where(not(col("id") === 10L)),
      df.where(col("id").isin((0L until 200L).map(_ * 97): _*)))
    for (q <- queries) { val o = compare(q); assert(o.on == o.off, q.queryExecution.analyzed.toString) }
    val and = compare(df.where(col("id") === 10L && col("email") === "user-15000"))
    assert(and.filesRead == 0)
    val or = compare(df.where(col("id") === 10L || col("email") === "user-15000"))
    assert(or.filesRead == 2 && or.on.size == 2)
  }

  test("a file changed after the index was built is always read") {
    // Files the index does not know: written as another engine would (no maintenance on write).
    withSQLConf(BloomConf.MaintainOnWrite -> "false") {
      val dir = tempDir("stale") + "/t"
      spark.range(0, 100, 1, 4).write.parquet(dir)
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
      spark.range(1000, 1010, 1, 1).write.mode("append").parquet(dir)
      val o = compare(spark.read.parquet(dir).where(col("id") === 1005L))
      assert(o.on == o.off && o.on.size == 1)
      val d = BloomIndexes.describe(spark, TableRef.Path(dir), "ix")
      assert(d.filesNotCovered == 1 && d.filesCovered == 4)
      BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
      val d2 = BloomIndexes.describe(spark, TableRef.Path(dir), "ix")
      assert(d2.filesNotCovered == 0 && d2.filesCovered == 5 && d2.version == 2)
      val o2 = compare(spark.read.parquet(dir).where(col("id") === 1005L))
      assert(o2.on == o2.off && o2.filesRead == 1)
    }
  }

  test("row groups that cannot match are not read inside a kept file") {
    val dir = tempDir("rg") + "/t"
    spark.range(0, 200000, 1, 1).select(col("id"), sha2(col("id").cast("string"), 256).as("h"))
      .write.option("parquet.block.size", 256 * 1024).parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("h")), Map.empty, ifNotExists = false)
    val target = spark.read.parquet(dir).where(col("id") === 123456L).select("h").head().getString(0)
    val o = compare(spark.read.parquet(dir).where(col("h") === target))
    assert(o.on == o.off && o.on.size == 1)
    val s = o.skipping.head
    assert(s.rowGroupsTotal > 2, s)
    assert(s.rowGroupsKept == 1, s)
  }

  test("a split with kept row groups far apart is read whole when the bytes skipped do not pay for the extra opens") {
    import sparkbloom.scan.BloomParquetFileFormat.{pieces, readWhole}
    val ranges = Array(0L, 100L, 300L, 400L, 900L, 1000L)
    assert(pieces(ranges, 0, 1000) == Seq(0L -> 100L, 300L -> 400L, 900L -> 1000L))
    assert(!readWhole(pieces(ranges, 0, 1000), 0, 1000, minSkipPerExtraRead = 350)) // 700 skipped >= 2 x 350
    assert(readWhole(pieces(ranges, 0, 1000), 0, 1000, minSkipPerExtraRead = 351))
    assert(!readWhole(Seq(300L -> 400L), 0, 1000, minSkipPerExtraRead = 1L << 40)) // one piece: no extra open
    val dir = tempDir("rgwhole") + "/t"
    spark.range(0, 100000, 1, 1).select(col("id"), sha2(col("id").cast("string"), 256).as("h"))
      .write.option("parquet.block.size", 128 * 1024).parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("h")), Map.empty, ifNotExists = false)
    // h is a hash: min/max statistics cannot skip its row groups, only the index can.
    val hs = spark.read.parquet(dir).where(col("id").isin(5L, 50005L, 99999L)).select("h").collect().map(_.getString(0))
    def rowsScanned(threshold: String): Long = {
      spark.conf.set("spark.sparkbloom.rowGroupPruning.minSkipPerExtraRead", threshold)
      try {
        val o = compare(spark.read.parquet(dir).where(col("h").isin(hs: _*)))
        assert(o.on == o.off && o.on.size == 3, threshold)
        assert(o.skipping.head.rowGroupsKept <= 3 && o.skipping.head.rowGroupsTotal > 6 && o.filesRead == 1,
          (threshold, o.skipping))
        val q = spark.read.parquet(dir).where(col("h").isin(hs: _*))
        q.collect()
        collect(q.queryExecution.executedPlan) { case s: org.apache.spark.sql.execution.FileSourceScanExec =>
          s.metrics("numOutputRows").value
        }.sum
      } finally spark.conf.unset("spark.sparkbloom.rowGroupPruning.minSkipPerExtraRead")
    }
    // Spark cuts the file into splits; a split holding several kept row groups is read whole with "1g" (the
    // bytes skipped are far under 1 GiB per extra piece), in pieces with "0"; a split holding none is not read.
    val whole = rowsScanned("1g")
    val pieced = rowsScanned("0")
    assert(pieced < 100000 / 4, pieced)
    assert(whole > 100000 / 2 && whole > 2 * pieced, (whole, pieced))
  }

  test("row-group pruning gives the same rows with Spark's row-based (non-vectorised) reader") {
    val dir = tempDir("rgrow") + "/t"
    spark.range(0, 100000, 1, 1).select(col("id"), sha2(col("id").cast("string"), 256).as("h"))
      .write.option("parquet.block.size", 128 * 1024).parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("h"), ColumnSpec("id")), Map.empty,
      ifNotExists = false)
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try {
      val hs =
        spark.read.parquet(dir).where(col("id").isin(5L, 50005L, 99999L)).select("h").collect().map(_.getString(0))
      val o = compare(spark.read.parquet(dir).where(col("h").isin(hs: _*)))
      assert(o.on == o.off && o.on.size == 3)
      assert(o.skipping.head.rowGroupsKept <= 3 && o.skipping.head.rowGroupsTotal > 3, o.skipping)
    } finally spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
  }

  test("spark.sparkbloom.index.root keeps indexes outside the table directory") {
    val dir = tempDir("ro") + "/t"
    val root = tempDir("indexroot")
    spark.range(0, 1000, 1, 5).write.parquet(dir)
    spark.conf.set("spark.sparkbloom.index.root", root)
    try {
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
      assert(!new java.io.File(dir, "_sparkbloom").exists())
      assert(new java.io.File(root).list().nonEmpty)
      val o = compare(spark.read.parquet(dir).where(col("id") === 321L))
      assert(o.on == o.off && o.on.size == 1 && o.filesRead == 1)
    } finally spark.conf.unset("spark.sparkbloom.index.root")
    val without = compare(spark.read.parquet(dir).where(col("id") === 321L))
    assert(without.on == without.off && without.filesRead == 5) // the index is not found under the table
  }

  test("INT96 timestamps prune, except when Spark's int96TimestampConversion shifts them on read") {
    val dir = tempDir("int96") + "/t"
    spark.range(0, 400, 1, 4).selectExpr("id", "timestamp_seconds(id * 3600) as ts").write.parquet(
      dir) // INT96 by default
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("ts")), Map.empty, ifNotExists = false)
    val ts = spark.read.parquet(dir).where(col("id") === 123L).select("ts").head().getTimestamp(0)
    val pruned = compare(spark.read.parquet(dir).where(col("ts") === lit(ts)))
    assert(pruned.on == pruned.off && pruned.on.size == 1 && pruned.filesRead == 1)
    spark.conf.set("spark.sql.parquet.int96TimestampConversion", "true")
    try {
      val kept = compare(spark.read.parquet(dir).where(col("ts") === lit(ts)))
      assert(kept.on == kept.off && kept.on.size == 1 && kept.filesRead == 4)
    } finally spark.conf.unset("spark.sql.parquet.int96TimestampConversion")
  }
}
