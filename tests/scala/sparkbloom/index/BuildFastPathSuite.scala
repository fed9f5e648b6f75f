package sparkbloom.index

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.functions._

import sparkbloom.AllTypesData
import sparkbloom.api.BloomIndexes
import sparkbloom.index.sliced.ColumnSlice
import sparkbloom.parquet.{ChunkHasher, Footers}
import sparkbloom.sbbf.Sbbf
import sparkbloom.testing.SparkSessionSuite

/**
 * The build's fast paths: hashing a chunk from its dictionary page alone, or from its PLAIN page
 * bytes, must give exactly the filters (and counts) the column reader gives; a chunk mixing dictionary and
 * PLAIN pages (a dictionary fallback) must take the column reader and still find every value.
 */
class BuildFastPathSuite extends SparkSessionSuite {

  private def loaded(dir: String, name: String): IndexVersion = StoredIndex.loaded(spark, dir, name)

  private def filterBytes(v: IndexVersion, column: String, rg: Int): Array[Byte] =
    StoredIndex.filterBytes(v, column, rg)

  private def create(dir: String, name: String, cols: Seq[String], fastPaths: Boolean): Unit = {
    spark.conf.set("spark.sparkbloom.build.fastPaths", fastPaths.toString)
    try BloomIndexes.create(spark, TableRef.Path(dir), name, cols.map(ColumnSpec(_)), Map.empty, ifNotExists = false)
    finally spark.conf.unset("spark.sparkbloom.build.fastPaths")
  }

  /** Every row group of every column: same figures, same filter bytes. */
  private def assertSameIndex(dir: String, cols: Seq[String], a: String, b: String): Unit = {
    val (x, y) = (loaded(dir, a), loaded(dir, b))
    assert(x.layout.paths.toSeq == y.layout.paths.toSeq)
    for (col <- cols; rg <- 0 until x.layout.numRowGroups) {
      val (cx, cy) = (x.layout.column(col).get, y.layout.column(col).get)
      val what = s"$col, row group $rg"
      assert(cx.nonNull(rg) == cy.nonNull(rg), what)
      assert(cx.ndv(rg) == cy.ndv(rg), what)
      assert(cx.flags(rg) == cy.flags(rg), what)
      assert(cx.source(rg) == cy.source(rg), what)
      assert(cx.fpp(rg) == cy.fpp(rg), what)
      assert(cx.encodings(cx.encoding(rg)) == cy.encodings(cy.encoding(rg)), what)
      val (fx, fy) = (filterBytes(x, col, rg), filterBytes(y, col, rg))
      assert((fx == null) == (fy == null), what)
      if (fx != null) assert(java.util.Arrays.equals(fx, fy), s"$what: filter bytes differ")
    }
  }

  /** How each chunk of `column` in the table's files would be hashed: 'd'ictionary, 'p'lain or 'r'eader. */
  private def ways(dir: String, column: String): Seq[Char] = {
    val conf = spark.sessionState.newHadoopConf()
    val fs = new Path(dir).getFileSystem(conf)
    fs.listStatus(new Path(dir)).toSeq.map(_.getPath).filter(_.getName.endsWith(".parquet")).flatMap { p =>
      val footer = Footers.read(conf, p)
      footer.rowGroups.indices.flatMap(rg => footer.chunk(rg, column)).map { ch =>
        val desc = footer.schema.getColumnDescription(Array(ch.column))
        if (ChunkHasher.dictionaryOnly(ch.meta, desc)) 'd' else if (ChunkHasher.plainOnly(ch.meta, desc)) 'p' else 'r'
      }
    }
  }

  private def counters(): (Long, Long, Long) =
    (ChunkHasher.Counters.dictionary.get, ChunkHasher.Counters.plain.get, ChunkHasher.Counters.reader.get)

  for (writer <- Seq("PARQUET_1_0", "PARQUET_2_0")) {
    test(s"dictionary and PLAIN fast paths build the same filters as the column reader ($writer pages)") {
      val dir = tempDir("fast") + "/t"
      val cols = AllTypesData.columns.filterNot(_ == "b") ++ Seq("lc", "li", "ld")
      AllTypesData.frame(spark, 3000)
        .withColumn("lc", concat(lit("k"), (abs(coalesce(col("l"), lit(0L))) % 20).cast("string")))
        .withColumn("li", (coalesce(col("i"), lit(0)) % 7).cast("int"))
        .withColumn("ld", when(col("d").isNull, lit(null)).otherwise(round(col("d") / 500.0)))
        .repartition(4)
        .write.option("parquet.writer.version", writer).parquet(dir)
      val seen = cols.flatMap(c => ways(dir, c)).toSet
      assert(seen.contains('d'), "some chunks are dictionary-only")
      if (writer == "PARQUET_1_0") assert(seen.contains('p'), "some chunks are all PLAIN")
      val (d0, p0, r0) = counters()
      create(dir, "fast", cols, fastPaths = true)
      val (d1, p1, r1) = counters()
      assert(d1 - d0 == cols.flatMap(c => ways(dir, c)).count(_ == 'd'),
        "every dictionary-only chunk took the dictionary path")
      assert(p1 - p0 == cols.flatMap(c => ways(dir, c)).count(_ == 'p'), "every PLAIN chunk took the page path")
      create(dir, "slow", cols, fastPaths = false)
      val (d2, p2, r2) = counters()
      assert(d2 == d1 && p2 == p1 && r2 - r1 == cols.flatMap(c => ways(dir, c)).size,
        "fastPaths=false: the column reader only")
      assertSameIndex(dir, cols, "fast", "slow")
      val df = spark.read.parquet(dir)
      for (q <- Seq(df.where(col("lc") === "k7"), df.where(col("li") === 3), df.where(col("str") === "värde-1234"),
          df.where(col("l") === 42L * 10000000019L - 42), df.where(col("lc") === "absent"))) {
        val o = compare(q)
        assert(o.on == o.off)
      }
    }
  }

  test(
    "harvest first: files with native filters in one job, the rest scanned with the same sizing as without harvest") {
    val dir = tempDir("harvest") + "/t"
    def part(from: Long, native: Boolean): Unit = {
      val w = spark.range(from, from + 4000, 1, 4).select(col("id"), concat(lit("v"), col("id").cast("string")).as("s"))
        .write.mode("append")
      (if (native)
         w.option("parquet.bloom.filter.enabled", "true").option("parquet.bloom.filter.expected.ndv#id", "1000")
           .option("parquet.bloom.filter.expected.ndv#s", "1000")
       else w).parquet(dir)
    }
    part(0, native = true); part(100000, native = false)
    val cols = Seq("id", "s")
    val harvested =
      BloomIndexes.create(spark, TableRef.Path(dir), "h", cols.map(ColumnSpec(_)), Map.empty, ifNotExists = false)
    spark.conf.set("spark.sparkbloom.harvest.enabled", "false")
    try BloomIndexes.create(spark, TableRef.Path(dir), "s", cols.map(ColumnSpec(_)), Map.empty, ifNotExists = false)
    finally spark.conf.unset("spark.sparkbloom.harvest.enabled")
    assert(harvested.filtersHarvested == 8 && harvested.filtersScanned == 8, harvested.toString)
    val (h, sc) = (loaded(dir, "h"), loaded(dir, "s"))
    assert(h.layout.paths.toSet == sc.layout.paths.toSet)
    for (col <- cols; f <- h.layout.paths.indices) {
      val rgH = h.layout.firstRg(f); val rgS = sc.layout.firstRg(sc.layout.fileIndex.get(h.layout.paths(f)))
      val ch = h.layout.column(col).get
      if (ch.source(rgH) == ColumnSlice.sourceId("scan")) {
        assert(java.util.Arrays.equals(filterBytes(h, col, rgH), filterBytes(sc, col, rgS)),
          s"$col ${h.layout.paths(f)}")
        assert(ch.ndv(rgH) == sc.layout.column(col).get.ndv(rgS) && ch.fpp(rgH) == sc.layout.column(col).get.fpp(rgS))
      } else assert(ch.source(rgH) == ColumnSlice.sourceId("harvest"))
    }
    val df = spark.read.parquet(dir)
    for (q <- Seq(df.where(col("id") === 17L), df.where(col("s") === "v100017"), df.where(col("id") === -1L))) {
      val o = compare(q); assert(o.on == o.off)
    }
  }

  test("the unrolled observed FPP equals the per-word product it replaced, to the bit") {
    val rnd = new scala.util.Random(9)
    for (blocks <- Seq(1, 7, 64, 1000); density <- Seq(0.05, 0.3, 0.9)) {
      val words =
        Array.fill(blocks * 8)((0 until 32).foldLeft(0)((w, i) => if (rnd.nextDouble() < density) w | (1 << i) else w))
      var sum = 0.0
      for (b <- 0 until blocks) {
        var p = 1.0; for (w <- 0 until 8) p *= Integer.bitCount(words(b * 8 + w)) / 32.0; sum += p
      }
      assert(
        java.lang.Double.doubleToRawLongBits(Sbbf.wrap(words).observedFpp) ==
          java.lang.Double.doubleToRawLongBits(sum / blocks), s"$blocks blocks, density $density")
    }
  }

  test(
    "a chunk mixing dictionary and PLAIN pages (dictionary fallback) takes the column reader and finds every value") {
    val dir = tempDir("mixed") + "/t"
    val n = 20000
    // Repeating values first (dictionary pages), then unique ones overflow the small dictionary: PLAIN pages.
    spark.range(0, n, 1, 1)
      .select(col("id"),
        when(col("id") < n / 2, concat(lit("k"), (col("id") % 10).cast("string")))
          .otherwise(concat(lit("unique-value-"), col("id").cast("string"))).as("s"))
      .coalesce(1)
      .write.option("parquet.dictionary.page.size", "4096").option("parquet.page.size", "2048")
      .option("parquet.page.size.row.check.min", "10").option("parquet.page.size.row.check.max", "100")
      .parquet(dir)
    val conf = spark.sessionState.newHadoopConf()
    val file = new Path(dir).getFileSystem(conf).listStatus(new Path(dir)).map(_.getPath).filter(
      _.getName.endsWith(".parquet")).head
    val stats = Footers.read(conf, file).chunk(0, "s").get.meta.getEncodingStats
    assert(stats.hasDictionaryEncodedPages && stats.hasNonDictionaryEncodedPages,
      s"the writer fell back from the dictionary: ${stats.getDataEncodings.asScala}")
    assert(ways(dir, "s") == Seq('r'))
    val r0 = ChunkHasher.Counters.reader.get
    create(dir, "fast", Seq("s"), fastPaths = true)
    assert(ChunkHasher.Counters.reader.get == r0 + 1)
    create(dir, "slow", Seq("s"), fastPaths = false)
    assertSameIndex(dir, Seq("s"), "fast", "slow")
    val c = loaded(dir, "fast").layout.column("s").get
    assert(c.ndv(0) == 10 + n / 2 && c.nonNull(0) == n)
    val df = spark.read.parquet(dir)
    for (v <- Seq("k0", "k9", "unique-value-10000", s"unique-value-${n - 1}")) {
      val o = compare(df.where(col("s") === v))
      assert(o.on == o.off && o.on.nonEmpty, v)
    }
    val absent = compare(df.where(col("s") === "unique-value-5"))
    assert(absent.on == absent.off && absent.on.isEmpty)
  }
}
