package sparkbloom.reliability

import java.io.File

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, IndexDescription, TableRef}
import sparkbloom.testing.SparkSessionSuite

/**
 * The table changes after its index was built: every query stays correct before and after REFRESH
 * (files the index does not know, or knows with another size or modification time, are read), and
 * DESCRIBE says what is not covered.
 */
class StaleDataSuite extends SparkSessionSuite {
  // The table is changed the way another engine would change it: Spark's writer without maintenance on write.
  override protected def sparkConf: Map[String, String] = Map(BloomConf.MaintainOnWrite -> "false")

  private def rows(from: Long, until: Long, files: Int): DataFrame =
    spark.range(from, until, 1, files).select(col("id"), concat(lit("k"), col("id")).as("s"))

  private def newTable(files: Int = 4): String = {
    val dir = tempDir("stale") + "/t"
    rows(0, 400, files).write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)
    dir
  }
  private def describe(dir: String): IndexDescription = BloomIndexes.describe(spark, TableRef.Path(dir), "ix")
  private def dataFiles(dir: String): Seq[File] =
    new File(dir).listFiles().toSeq.filter(f => f.getName.startsWith("part-") && f.getName.endsWith(".parquet")).sortBy(
      _.getName)

  /** Lookups of old, new, absent values and combinations: same rows with the index on and off. */
  private def assertCorrect(dir: String, keys: Seq[Long]): Unit = {
    def df = spark.read.parquet(dir)
    val preds = keys.flatMap(k => Seq(col("id") === k, col("s") === s"k$k")) ++
      Seq(col("id") <=> keys.head, col("id").isin(keys: _*), col("s").isin(keys.map(k => s"k$k"): _*),
        col("id") === keys.head || col("s") === s"k${keys.last}")
    for (p <- preds) {
      val o = compare(df.where(p))
      assert(o.on == o.off, s"$p on $dir: with index ${o.on.size} rows, without ${o.off.size}")
    }
  }

  /** Replaces `victim` in place, as another tool would; drops Hadoop's checksum side file, now stale. */
  private def replace(victim: File, by: File): Unit = {
    java.nio.file.Files.copy(by.toPath, victim.toPath, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
    new File(victim.getParentFile, s".${victim.getName}.crc").delete()
  }

  private val probe = Seq(5L, 150L, 399L, 1005L, 2042L, 99999L)

  test("appended files are read before REFRESH and indexed after it") {
    val dir = newTable()
    rows(1000, 1100, 2).write.mode("append").parquet(dir)
    assertCorrect(dir, probe)
    assert(describe(dir).filesNotCovered == 2)
    BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
    assert(describe(dir).filesNotCovered == 0)
    assertCorrect(dir, probe)
  }

  test("deleted files are reported and the remaining rows are still found") {
    val dir = newTable()
    assert(dataFiles(dir).head.delete())
    assertCorrect(dir, probe)
    val d = describe(dir)
    assert(d.filesDeleted == 1 && d.filesNotCovered == 0, d)
    BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
    assert(describe(dir).filesDeleted == 0)
    assertCorrect(dir, probe)
  }

  test("overwriting the table never hides the new rows, with or without REFRESH") {
    val dir = newTable()
    rows(2000, 2100, 3).write.mode("overwrite").parquet(dir)
    assertCorrect(dir, probe ++ Seq(2000L, 2099L))
    // Spark's overwrite may remove the _sparkbloom directory with the old files; if it survived it must
    // report the old files as deleted and the new ones as not covered.
    val survived = new File(dir, "_sparkbloom/ix").exists()
    if (survived) {
      val d = describe(dir)
      assert(d.filesNotCovered == 3 && d.filesDeleted == 4, d)
      BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = true)
      assert(describe(dir).filesNotCovered == 0)
      assertCorrect(dir, probe ++ Seq(2000L, 2099L))
    }
    info(s"the index directory ${if (survived) "survived" else "was removed by"} the overwrite")
  }

  test("a file replaced under the same name with a different size is read, not pruned") {
    val dir = newTable()
    val victim = dataFiles(dir).head
    val other = tempDir("repl") + "/r"
    rows(5000, 5300, 1).write.parquet(other)
    val replacement = new File(other).listFiles().find(_.getName.endsWith(".parquet")).get
    assert(replacement.length() != victim.length())
    replace(victim, replacement)
    spark.catalog.clearCache()
    assertCorrect(dir, probe ++ Seq(5000L, 5123L))
    assert(describe(dir).filesNotCovered == 1)
    BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
    assert(describe(dir).filesNotCovered == 0)
    assertCorrect(dir, probe ++ Seq(5000L, 5123L))
  }

  test("a file replaced by one of the same size but a new modification time is read, not pruned") {
    // Plain, uncompressed, non-null fixed-width longs: two files of 100 rows have the same byte size.
    def write(from: Long, to: String): Unit = spark.range(from, from + 100, 1, 1).write
      .option("compression", "none").option("parquet.enable.dictionary", "false").parquet(to)
    val dir = tempDir("samesize") + "/t"
    write(0, dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
    val victim = dataFiles(dir).head
    val other = tempDir("repl") + "/r"
    write(7000, other)
    val replacement = new File(other).listFiles().find(_.getName.endsWith(".parquet")).get
    assert(replacement.length() == victim.length(), "the two files must have the same size for this test")
    val mtime = victim.lastModified()
    replace(victim, replacement)
    assert(victim.setLastModified(mtime + 10000))
    for (k <- Seq(5L, 7000L, 7050L)) {
      val o = compare(spark.read.parquet(dir).where(col("id") === k))
      assert(o.on == o.off, s"id = $k")
    }
    assert(describe(dir).filesNotCovered == 1)
  }

  test("a partition added after the index was built is read before REFRESH and indexed after it") {
    val dir = tempDir("part") + "/t"
    rows(0, 400, 4).withColumn("p", (col("id") % 2).cast("int")).write.partitionBy("p").parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)
    val before = describe(dir)
    rows(1000, 1100, 2).withColumn("p", lit(7)).write.mode("append").partitionBy("p").parquet(dir)
    assertCorrect(dir, probe ++ Seq(1000L, 1099L))
    val o = compare(spark.read.parquet(dir).where(col("p") === 7 && col("id") === 1050L))
    assert(o.on == o.off && o.on.size == 1)
    assert(describe(dir).filesNotCovered == describe(dir).filesInTable - before.filesInTable)
    BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
    assert(describe(dir).filesNotCovered == 0)
    assertCorrect(dir, probe ++ Seq(1000L, 1099L))
  }
}
