package sparkbloom.reliability

import java.io.{File, RandomAccessFile}
import java.nio.file.{Files, StandardCopyOption}

import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.index.{BloomIndexException, ColumnSpec, IndexDescription, IndexStore, TableRef}
import sparkbloom.index.sliced.LayoutCodec
import sparkbloom.testing.SparkSessionSuite

/**
 * Damage inside the index directory, and Parquet files whose own bloom filters are corrupt: queries
 * still return the rows they return without the index, nothing crashes, and DESCRIBE reports the damage.
 */
class CorruptionSuite extends SparkSessionSuite {

  private def newTable(): String = {
    val dir = tempDir("corrupt") + "/t"
    spark.range(0, 2000, 1, 4).select(col("id"), concat(lit("k"), col("id")).as("s")).write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)
    dir
  }
  private def ixDir(dir: String) = new File(dir, s"${IndexStore.DirName}/ix")
  private def dataDir(dir: String): File =
    ixDir(dir).listFiles().filter(f => f.isDirectory && f.getName.startsWith("v")).maxBy(_.getName)
  /** The block-sliced filter files of the latest version, largest first, then its layout file. */
  private def parts(dir: String): Seq[File] =
    dataDir(dir).listFiles().toSeq.filter(_.getName.endsWith(".seg")).sortBy(f => (-f.length(), f.getName))
  private def layoutFile(dir: String): File = new File(dataDir(dir), IndexStore.LayoutFile)
  /** The summary segments of the latest version (one per column here). */
  private def summaryFiles(dir: String): Seq[File] =
    dataDir(dir).listFiles().toSeq.filter(_.getName.endsWith(".sum")).sortBy(_.getName)
  /** Where the layout's core ends and its statistics begin (LayoutCodec's trailer). */
  private def layoutCoreLength(dir: String): Long = {
    val b = Files.readAllBytes(layoutFile(dir).toPath)
    java.nio.ByteBuffer.wrap(b, b.length - LayoutCodec.TrailerBytes, 4).getInt.toLong
  }
  private def commit(dir: String, v: Int) = new File(ixDir(dir), s"_commits/$v.json")
  /** The cache is keyed by version; damage made behind its back needs a fresh load, as after a restart. */
  private def forget(dir: String): Unit =
    IndexStore.invalidate(new org.apache.hadoop.fs.Path("file:" + ixDir(dir).getPath))
  private def describe(dir: String): IndexDescription = {
    forget(dir); BloomIndexes.describe(spark, TableRef.Path(dir), "ix", verify = true)
  }

  private def assertCorrect(dir: String): Unit = {
    forget(dir)
    def df = spark.read.parquet(dir)
    for (p <- Seq(col("id") === 7L, col("id") === 1999L, col("s") === "k1234", col("id") === 123456L,
        col("id").isin(1L, 999L, 1500L), col("s").isin("k3", "nope"))) {
      val o = compare(df.where(p))
      assert(o.on == o.off, s"$p: with index ${o.on.size} rows, without ${o.off.size}")
    }
  }

  private def truncate(f: File, keep: Long): Unit = {
    val r = new RandomAccessFile(f, "rw");
    try r.setLength(keep)
    finally r.close()
  }
  private def flip(f: File, at: Long): Unit = {
    val r = new RandomAccessFile(f, "rw")
    try { r.seek(at); val b = r.read(); r.seek(at); r.write(b ^ 0x10) }
    finally r.close()
  }

  test("a truncated index segment is reported and the files it covers are read") {
    val dir = newTable()
    truncate(parts(dir).head, parts(dir).head.length() / 2)
    assertCorrect(dir)
    assert(describe(dir).problems.nonEmpty)
  }

  test("a bit flip anywhere in an index segment, a summary segment or the layout never loses rows") {
    val dir = newTable()
    assert(summaryFiles(dir).size == 2, dataDir(dir).listFiles().toSeq)
    for (p <- Seq(parts(dir).head, summaryFiles(dir).head, layoutFile(dir))) {
      val len = p.length()
      // Header, pages, filters and footer: a flip at each of these offsets, one after the other.
      for (at <- Seq(4L, len / 5, len / 3, len / 2, 2 * len / 3, len - 20)) {
        val saved = Files.readAllBytes(p.toPath)
        flip(p, at)
        assertCorrect(dir)
        Files.write(p.toPath, saved)
      }
    }
  }

  test("a damaged layout is reported and the whole table is read") {
    val dir = newTable()
    flip(layoutFile(dir), layoutCoreLength(dir) / 2)
    assertCorrect(dir)
    val d = describe(dir)
    assert(d.problems.exists(_.contains("layout")) && d.filesNotCovered == d.filesInTable, d)
  }

  test("damaged layout statistics are reported by DESCRIBE; planning, which does not read them, still prunes") {
    val dir = newTable()
    flip(layoutFile(dir), layoutCoreLength(dir) + 3)
    assertCorrect(dir)
    forget(dir)
    val o = compare(spark.read.parquet(dir).where(col("id") === 7L))
    assert(o.on == o.off && o.filesRead == 1, o)
    val d = describe(dir)
    assert(d.problems.exists(_.contains("statistics are damaged")) && d.filesNotCovered == 0, d)
    // REFRESH FULL writes them again
    BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = true)
    assert(describe(dir).problems.isEmpty)
  }

  test("a missing summary segment is reported, and the segments it summarised are probed whole") {
    val dir = newTable()
    summaryFiles(dir).foreach(f => assert(f.delete()))
    assertCorrect(dir)
    forget(dir)
    val o = compare(spark.read.parquet(dir).where(col("id") === 7L))
    assert(o.on == o.off && o.filesRead == 1, o)
    assert(describe(dir).problems.exists(_.contains(".sum")))
  }

  test("a bit flip inside a stored filter is caught by its checksum") {
    val dir = newTable()
    val p = parts(dir).head
    // A flip in the middle of a segment lands in one run; DESCRIBE checks every run's CRC.
    flip(p, p.length() / 2)
    assertCorrect(dir)
    assert(describe(dir).problems.nonEmpty)
  }

  test("a missing index segment is reported and the files it covered are read") {
    val dir = newTable()
    assert(parts(dir).head.delete())
    assertCorrect(dir)
    assert(describe(dir).problems.nonEmpty)
  }

  test("foreign files in the index directory are reported or ignored, never trusted") {
    val dir = newTable()
    Files.write(new File(dataDir(dir), "part-99999-foreign.parquet").toPath, "not parquet at all".getBytes)
    Files.write(new File(dataDir(dir), "README.txt").toPath, "hello".getBytes)
    Files.write(new File(ixDir(dir), "_commits/notes.json").toPath, "{".getBytes)
    new File(ixDir(dir), "v99-stray").mkdirs()
    assertCorrect(dir)
    assert(describe(dir).problems.exists(p => p.contains("part-99999-foreign") && p.contains("ignored")),
      describe(dir).problems)
  }

  test("a truncated latest commit falls back to the previous version, reported") {
    // Files the index does not know: written as another engine would (no maintenance on write).
    withSQLConf(BloomConf.MaintainOnWrite -> "false") {
      val dir = newTable()
      spark.range(5000, 5100, 1, 1).select(col("id"), concat(lit("k"), col("id")).as("s")).write.mode("append").parquet(
        dir)
      BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
      truncate(commit(dir, 2), 10)
      assertCorrect(dir)
      val o = compare(spark.read.parquet(dir).where(col("id") === 5050L))
      assert(o.on == o.off && o.on.size == 1)
      val d = describe(dir)
      assert(d.version == 1 && d.problems.nonEmpty && d.filesNotCovered == 1, d)
    }
  }

  test("a bit-flipped or emptied only commit never breaks a query") {
    val dir = newTable()
    val c = commit(dir, 1)
    val saved = Files.readAllBytes(c.toPath)
    for (at <- Seq(0L, saved.length / 4L, saved.length / 2L, saved.length - 2L)) {
      flip(c, at); assertCorrect(dir); Files.write(c.toPath, saved)
    }
    truncate(c, 0)
    assertCorrect(dir)
    val e = intercept[BloomIndexException](describe(dir))
    assert(e.getMessage.contains("does not exist"))
  }

  test("a commit whose data directory is gone is reported and the table is read whole") {
    val dir = newTable()
    val data = dataDir(dir)
    data.listFiles().foreach(_.delete()); assert(data.delete())
    assertCorrect(dir)
    val d = describe(dir)
    assert(d.problems.exists(_.contains("missing")), d.problems)
    assert(d.filesNotCovered == d.filesInTable)
  }

  private def fixture(name: String): File = {
    val shared = sys.props.getOrElse("sparkbloom.shared", "../shared")
    val f = new File(shared, s"fixtures/duckdb/$name")
    assume(f.exists(), s"fixture $f is missing (sparkbloom.shared=$shared)")
    f
  }

  for ((name, query, expected) <- Seq(
      ("bloom_filter_bad_numbytes.parquet", 0L, 1000), ("bloom_filter_bad_length_range.parquet", 0L, 1000),
      ("bloom_filter_short_numbytes.parquet", 200L, 100))) {
    test(s"corrupt native bloom filters in DuckDB's $name are not harvested and r = $query keeps its $expected rows") {
      val dir = tempDir("duck") + "/t"
      new File(dir).mkdirs()
      Files.copy(fixture(name).toPath, new File(dir, name).toPath, StandardCopyOption.REPLACE_EXISTING)
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("r")), Map.empty, ifNotExists = false)
      // parquet-java's own bloom filter pushdown trusts these corrupt filters and drops the rows without
      // sparkbloom (Spark 4.0.4). With the index in use, sparkbloom turns that pushdown off for the scan
      // and the rows are there with Spark's default settings.
      val withIndex = withIndexEnabled(on = true)(spark.read.parquet(dir).where(col("r") === query).collect())
      assert(withIndex.length == expected)
      spark.conf.set("parquet.filter.bloom.enabled", "false") // the baseline must be a plain scan
      val o = compare(spark.read.parquet(dir).where(col("r") === query))
      assert(o.on == o.off && o.on.size == expected)
      spark.conf.unset("parquet.filter.bloom.enabled")
      val d = describe(dir)
      assert(d.problems.isEmpty && d.filtersScanned >= 1, d)
      val absent = compare(spark.read.parquet(dir).where(col("r") === 123456789L))
      assert(absent.on == absent.off && absent.on.isEmpty)
    }
  }
}
