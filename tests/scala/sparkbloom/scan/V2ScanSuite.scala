package sparkbloom.scan

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.api.{BloomIndexes, DataFrameTable}
import sparkbloom.index.{ColumnSpec, ScanSkipping, TableRef}
import sparkbloom.testing.SparkSessionSuite

/**
 * Spark's V2 Parquet scan (`spark.read.parquet` with parquet out of `spark.sql.sources.useV1SourceList`): bloom
 * indexes prune its files and row groups, Spark's own V2 reader reads the rest, and the rows equal the
 * index-off query (sparkbloom off, Parquet filter pushdown off).
 */
class V2ScanSuite extends SparkSessionSuite {

  private def v2[T](f: => T): T = {
    val old = spark.conf.get("spark.sql.sources.useV1SourceList")
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    try f
    finally spark.conf.set("spark.sql.sources.useV1SourceList", old)
  }

  private def truth(q: => DataFrame): Seq[Row] = withIndexEnabled(on = false) {
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try sortRows(q.collect().toSeq)
    finally spark.conf.unset("spark.sql.parquet.filterPushdown")
  }

  /** Rows, the skipping and the files actually planned for reading (Spark's own splits after pruning). */
  private def withIndex(q: => DataFrame): (Seq[Row], Seq[ScanSkipping], Int) = withIndexEnabled(on = true) {
    val df = q
    val rows = sortRows(df.collect().toSeq)
    val plan = df.queryExecution.executedPlan
    val files = collect(plan) { case b: BatchScanExec => b }.flatMap(_.inputPartitions.flatMap {
      case f: org.apache.spark.sql.execution.datasources.FilePartition => f.files.map(_.filePath.toString).toSeq
      case _ => Nil
    }).distinct.size
    (rows, SkippingReport.forPlan(plan), files)
  }

  private lazy val table: String = {
    val dir = tempDir("v2") + "/t"
    spark.range(0, 40000, 1, 200).select(col("id"), concat(lit("k-"), col("id")).as("s"), (col("id") % 5).as("g"))
      .write.parquet(dir)
    v2 {
      // the index is declared on the V2 DataFrame itself, as a user would (df.bloomFilterIndex in Python)
      val target = DataFrameTable.target(spark.read.parquet(dir), Seq("id", "s"))
      assert(target.table == TableRef.Path(new org.apache.hadoop.fs.Path(dir).toUri.toString) ||
          target.table.toString.contains(dir), target)
      BloomIndexes.create(spark, target.table, "ix", target.columns.map(ColumnSpec(_)), Map.empty, ifNotExists = false)
    }
    dir
  }

  test("a point lookup on a 200-file V2 path read plans only the file holding the key; rows equal index off") {
    v2 {
      val t = () => spark.read.parquet(table)
      assert(collect(t().where(col("id") === 1L).queryExecution.executedPlan) { case b: BatchScanExec => b }.nonEmpty,
        "the read is a V2 BatchScan")
      for ((pred, maxFiles) <- Seq[(org.apache.spark.sql.Column, Int)]((col("id") === 12345L, 1),
          (col("s") === "k-777", 1),
          (col("id") === -5L, 0), (col("id").isin(7L, 20007L, 39999L), 3), (col("id") === 5L && col("g") === 0L, 1),
          (col("id") === 5L || col("s") === "k-30000", 2))) {
        val (rows, skipping, files) = withIndex(t().where(pred))
        assert(rows == truth(t().where(pred)), pred)
        // the same decision as the V1 scan of the same files (the reference path)
        val v1 = withIndexEnabled(on = true) {
          spark.conf.set("spark.sql.sources.useV1SourceList", "parquet")
          try {
            val d = spark.read.parquet(table).where(pred); d.collect();
            SkippingReport.forPlan(d.queryExecution.executedPlan)
          } finally spark.conf.set("spark.sql.sources.useV1SourceList", "")
        }
        assert(v1.head.filesKept == files, s"$pred: V1 keeps ${v1.head.filesKept} files, V2 plans $files")
        assert(files <= maxFiles + 1, s"$pred: $files files planned") // + a false positive within the 0.1 budget
        assert(skipping.size == 1 && skipping.head.index.contains("ix") && skipping.head.filesTotal == 200, skipping)
        assert(skipping.head.filesKept == files, skipping)
      }
      val explained = withIndexEnabled(on = true)(t().where(col("id") === 12345L).queryExecution.executedPlan.toString)
      assert(explained.contains("BloomIndexSkipping") && explained.contains("BloomIndexes: [ix]"), explained)
      // the pruned count is in the scan's SQL metrics (Spark UI, SQL tab)
      val metered = withIndexEnabled(on = true) {
        val df = t().where(col("id") === 12345L); df.collect()
        collect(df.queryExecution.executedPlan) { case b: BloomScanMetricsExec => b.metrics("filesSkipped").value }
      }
      assert(metered.size == 1 && metered.head >= 198, s"filesSkipped metric: $metered")
    }
  }

  test("row groups inside a kept file are narrowed for Spark's V2 reader, vectorised or not") {
    val dir = tempDir("v2rg") + "/t"
    spark.range(0, 16000, 1, 2).select(col("id")).write.option("parquet.block.size", "8192").parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
    v2 {
      for (vectorized <- Seq("true", "false")) {
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
        try {
          val q = () => spark.read.parquet(dir).where(col("id").isin(10L, 15000L))
          val (rows, skipping, _) = withIndex(q())
          assert(rows == truth(q()) && rows.size == 2, vectorized)
          assert(skipping.head.rowGroupsKept == 2 && skipping.head.rowGroupsTotal > 4, skipping)
        } finally spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
      }
    }
  }

  test("paths with spaces, percent signs and non-ASCII characters are pruned by V1 and V2 alike, never lost") {
    val dir = tempDir("v2 odd") + "/t a%20b é"
    spark.range(0, 4000, 1, 8).select(col("id")).write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
    val old = spark.conf.get("spark.sql.sources.useV1SourceList")
    for (useV1 <- Seq("parquet", "")) {
      spark.conf.set("spark.sql.sources.useV1SourceList", useV1)
      try {
        for (k <- Seq(5L, 3999L, -1L)) {
          val q = () => spark.read.parquet(dir).where(col("id") === k)
          val (rows, skipping, _) = withIndex(q())
          assert(rows == truth(q()), s"v1=$useV1 $k")
          assert(skipping.exists(_.index.contains("ix")) && skipping.head.filesKept <= 1, s"v1=$useV1 $k: $skipping")
        }
      } finally spark.conf.set("spark.sql.sources.useV1SourceList", old)
    }
  }

  test("files appended after the index was built are read (and checked with their native filters)") {
    // Files the index does not know: written as another engine would (no maintenance on write).
    withSQLConf(BloomConf.MaintainOnWrite -> "false") {
      val dir = tempDir("v2new") + "/t"
      spark.range(0, 1000, 1, 4).write.parquet(dir)
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
      spark.range(1000, 2000, 1, 2).write.mode("append").option("parquet.bloom.filter.enabled#id", "true")
        .option("parquet.enable.dictionary", "false").parquet(dir)
      v2 {
        for (k <- Seq(5L, 1500L, 5000L)) {
          val q = () => spark.read.parquet(dir).where(col("id") === k)
          val (rows, skipping, files) = withIndex(q())
          assert(rows == truth(q()), k)
          assert(skipping.head.filesNotCovered == 2 && files <= 3, s"$k: $skipping, $files files")
        }
      }
    }
  }
}
