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
    withSQLConf(BloomConf.MaintainWithNativeFilters -> "false") {
      rows(2000, 2200, 2).write.mode("append").parquet(dir)
    }
    assert(nativeFilterColumns(dir, old2) == Seq.fill(2)(Set.empty[String]))
    val off = describe(TableRef.Path(dir))
    assert(off.filesNotCovered == 0 && off.filtersScanned == after.filtersScanned + 2 * 2, off)
    lookup(spark.read.parquet(dir), 2100, files = 1)
    // a user's own bloom filter settings for the write are kept
    val old3 = files
    rows(3000, 3100, 1).write.option("parquet.bloom.filter.enabled#id", "false").mode("append").parquet(dir)
    assert(nativeFilterColumns(dir, old3) == Seq(Set("s")))
    lookup(spark.read.parquet(dir), 3050, files = 1)
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
}
