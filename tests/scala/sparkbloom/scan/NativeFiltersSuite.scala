package sparkbloom.scan

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions._

import sparkbloom.BloomConf
import sparkbloom.TestSupport
import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, TableRef}
import sparkbloom.parquet.FileEncodings
import sparkbloom.shims.ParquetCompat
import sparkbloom.testing.SparkSessionSuite

/**
 * With sparkbloom loaded, the bloom filters inside Parquet files are used safely at read time on
 * every filtered scan, indexed or not, in place of parquet-java's own bloom level. Every answer is compared
 * with the truth: sparkbloom off and Spark's Parquet filter pushdown off (no row-group filtering at all).
 */
class NativeFiltersSuite extends SparkSessionSuite {

  /** Rows with no row-group filtering whatsoever: sparkbloom off, Parquet filter pushdown off. */
  private def truth(q: => DataFrame): Seq[Row] = withIndexEnabled(on = false) {
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try sortRows(q.collect().toSeq)
    finally spark.conf.unset("spark.sql.parquet.filterPushdown")
  }

  /** What Spark alone gives (sparkbloom off, parquet-java's bloom filtering as Spark configures it). */
  private def sparkAlone(q: => DataFrame): Seq[Row] = withIndexEnabled(on = false)(sortRows(q.collect().toSeq))

  private final case class Run(rows: Seq[Row], nativeSkipped: Long, nativeChecked: Long, invalid: Long, df: DataFrame)

  private def withSparkbloom(q: => DataFrame): Run = withIndexEnabled(on = true) {
    val df = q
    val rows = sortRows(df.collect().toSeq)
    val nodes = collect(df.queryExecution.executedPlan) { case m: BloomScanMetricsExec => m }
    def m(name: String) = nodes.flatMap(_.metrics.get(name)).map(_.value).sum
    Run(rows, m("nativeRowGroupsSkipped"), m("nativeRowGroupsChecked"), m("nativeFiltersInvalid"), df)
  }

  private lazy val negativeZero: String = {
    val dir = tempDir("negzero") + "/t"
    spark.range(0, 500, 1, 1).select(lit(-0.0d).as("x"), col("id"))
      .write.option("parquet.bloom.filter.enabled#x", "true").parquet(dir)
    dir
  }

  // Spark (parquet-java) writes no bloom filter for this chunk: it is dictionary-encoded whole. Spark alone loses
  // the rows in parquet-java's dictionary filter, which compares Double objects (-0.0 is not equal to 0.0 there).
  test("Spark-written -0.0 with bloom filtering asked for: x = 0.0 finds all 500 rows (Spark alone finds none)") {
    val q = () => spark.read.parquet(negativeZero).where(col("x") === 0.0d).agg(count(lit(1)))
    val alone = sparkAlone(q())
    info(s"Spark alone: $alone")
    assert(truth(q()) == Seq(Row(500L)))
    val r = withSparkbloom(q())
    assert(r.rows == Seq(Row(500L)))
    assert(r.nativeChecked >= 1 && r.nativeSkipped == 0, r)
    // also through SQL, `<=>` and IN
    spark.read.parquet(negativeZero).createOrReplaceTempView("negzero")
    for (sql <- Seq("SELECT count(*) FROM negzero WHERE x = 0.0D", "SELECT count(*) FROM negzero WHERE x <=> 0.0D",
        "SELECT count(*) FROM negzero WHERE x >= 0.0D",
        "SELECT count(*) FROM negzero WHERE x IN (0.0D, 7.0D)", "SELECT count(*) FROM negzero WHERE x = -0.0D")) {
      assert(withSparkbloom(spark.sql(sql)).rows == Seq(Row(500L)), sql)
    }
  }

  test("-0.0 in a chunk with a real bloom filter (no dictionary): found by x = 0.0, IN and >= 0.0") {
    val dir = tempDir("negzero-bloom") + "/t"
    spark.range(0, 300, 1, 1).select(lit(-0.0d).as("x"), lit(-0.0f).as("y"), col("id"))
      .write.option("parquet.bloom.filter.enabled#x", "true").option("parquet.bloom.filter.enabled#y", "true")
      .option("parquet.enable.dictionary", "false").parquet(dir)
    val t = () => spark.read.parquet(dir)
    for (pred <-
        Seq(col("x") === 0.0d, col("y") === 0.0f, col("x").isin(0.0d, 3.0d), col("x") >= 0.0d, col("x") <=> 0.0d)) {
      val q = () => t().where(pred).agg(count(lit(1)))
      info(s"$pred: Spark alone ${sparkAlone(q())}")
      assert(truth(q()) == Seq(Row(300L)), pred)
      assert(withSparkbloom(q()).rows == Seq(Row(300L)), pred)
    }
    val absent = withSparkbloom(t().where(col("x") === 1.0d))
    assert(absent.rows.isEmpty && absent.nativeSkipped == 1, absent)
  }

  test("Spark's V2 Parquet scan: parquet-java's bloom level is off too, so -0.0 is found") {
    val old = spark.conf.get("spark.sql.sources.useV1SourceList")
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    try {
      val q = () => spark.read.parquet(negativeZero).where(col("x") === 0.0d).agg(count(lit(1)))
      info(s"Spark alone, V2: ${sparkAlone(q())}")
      assert(withSparkbloom(q()).rows == Seq(Row(500L)))
    } finally spark.conf.set("spark.sql.sources.useV1SourceList", old)
  }

  test("Spark's V2 Parquet scan prunes row groups with native filters at read time, with Spark's V2 reader") {
    val old = spark.conf.get("spark.sql.sources.useV1SourceList")
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    try {
      val t = () => spark.read.parquet(keyed)
      for (pred <-
          Seq(col("id") === 4321L, col("s") === "k-77", col("id").isin((0 until 15).map(i => (i * 1000L): Any): _*),
            col("id") === 5L || col("s") === "k-12000", col("id") === -1L)) {
        val r = withSparkbloom(t().where(pred))
        assert(r.rows == truth(t().where(pred)), pred)
        assert(r.nativeSkipped > 0, s"$pred: $r")
        val plan = r.df.queryExecution.executedPlan.toString
        assert(plan.contains("BatchScan") && plan.contains("NativeBloomFilters"), plan)
      }
      for (vectorized <- Seq("true", "false")) { // Spark's columnar and row readers
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
        try {
          val pred = col("id").isin(3L, 9000L, 15999L)
          val r = withSparkbloom(t().where(pred))
          assert(r.rows == truth(t().where(pred)) && r.rows.size == 3 && r.nativeSkipped > 0,
            s"vectorized=$vectorized $r")
        } finally spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
      }
      // an aggregate pushed into the scan answers from footers: never narrowed
      spark.conf.set("spark.sql.parquet.aggregatePushdown", "true")
      try {
        val q = () => t().where(col("id") === 4321L).agg(max(col("id")))
        assert(withSparkbloom(q()).rows == truth(q()))
      } finally spark.conf.unset("spark.sql.parquet.aggregatePushdown")
      val skip = SkippingReport.forPlan(withSparkbloom(t().where(col("id") === 4321L)).df.queryExecution.executedPlan)
      assert(skip.size == 1 && skip.head.index.isEmpty && skip.head.nativeRowGroupsSkipped > 0, skip)
    } finally spark.conf.set("spark.sql.sources.useV1SourceList", old)
  }

  test("DuckDB's corrupt filters (short and bad numBytes) are ignored: r = 200 gives 100 rows, r = 0 gives 1000") {
    for ((file, value, expected) <- Seq(("duckdb/bloom_filter_short_numbytes.parquet", 200L, 100L),
        ("duckdb/bloom_filter_bad_numbytes.parquet", 0L, 1000L),
        ("duckdb/bloom_filter_bad_length_range.parquet", 0L, 1000L))) {
      val path = TestSupport.fixture(file).getAbsolutePath
      val q = () => spark.read.parquet(path).where(col("r") === value).agg(count(lit(1)))
      info(s"$file: Spark alone ${sparkAlone(q())}")
      assert(truth(q()) == Seq(Row(expected)), file)
      val r = withSparkbloom(q())
      assert(r.rows == Seq(Row(expected)), file)
      // parquet-java 1.13 (Spark 3.5) cannot read bloom_filter_length: filters from writers other than parquet-java
      // are never used there (Footers), so none is found corrupt and none rules a row group out.
      if (ParquetCompat.storedLengthReadable)
        assert(r.invalid >= 1, s"$file: the corrupt filter is counted as ignored: $r")
      else assert(r.nativeSkipped == 0, s"$file: no filter of DuckDB's is used: $r")
    }
  }

  private lazy val keyed: String = {
    // 4 files x 8 row groups of 500 distinct ids; native filters on id and s.
    val dir = tempDir("keyed") + "/t"
    spark.range(0, 16000, 1, 4).select(col("id"), concat(lit("k-"), col("id")).as("s"), (col("id") % 7).as("g"))
      .write.option("parquet.bloom.filter.enabled#id", "true").option("parquet.bloom.filter.enabled#s", "true")
      .option("parquet.block.size", "4096").option("parquet.enable.dictionary", "false").parquet(dir)
    dir
  }

  test("native filters prune row groups at read time without any index, and the rows are right") {
    val t = spark.read.parquet(keyed)
    val rgs = withSparkbloom(t.where(col("id") === 4321L)).nativeChecked
    assert(rgs >= 16, s"the table has many row groups ($rgs checked)")
    for (pred <- Seq(col("id") === 4321L, col("s") === "k-77", col("id").isin(1L, 9000L, 15999L, 99999L),
        col("id").isin((0 until 40).map(i => (i * 397L): Any): _*), // > 10 values: an InSet
        col("id") === 4321L && col("g") === 2L, col("id") === 5L || col("s") === "k-12000",
        col("id") <=> 77L, col("id") === -1L, col("s") === "absent")) {
      val r = withSparkbloom(t.where(pred))
      assert(r.rows == truth(t.where(pred)), pred)
      assert(r.nativeSkipped > 0, s"$pred: ${r.nativeSkipped} of ${r.nativeChecked} skipped")
    }
  }

  test("predicates native filters cannot answer keep every row group") {
    val t = spark.read.parquet(keyed)
    for (pred <- Seq(col("id") === 5L || col("g") === 3L, col("id").isNull, col("id") > 15990L, !(col("id") === 5L),
        col("g") === 2L /* no filter on g */ )) {
      val r = withSparkbloom(t.where(pred))
      assert(r.rows == truth(t.where(pred)), pred)
      assert(r.nativeSkipped == 0, pred)
    }
  }

  test("NaN is never pruned on; +0.0/-0.0 and NaN rows among others") {
    val dir = tempDir("nan") + "/t"
    spark.createDataFrame(
      spark.sparkContext.parallelize(
        Seq(Row(Double.NaN, 1), Row(-0.0d, 2), Row(1.5d, 3), Row(Float.NaN.toDouble, 4)), 1),
      org.apache.spark.sql.types.StructType.fromDDL("x DOUBLE, i INT"))
      // without a dictionary: parquet-java writes no bloom filter for a chunk it dictionary-encoded whole
      .write.option("parquet.bloom.filter.enabled#x", "true").option("parquet.enable.dictionary", "false").parquet(dir)
    val t = spark.read.parquet(dir)
    for (pred <- Seq(col("x") === Double.NaN, col("x").isNaN, col("x") === 0.0d, col("x") === 2.5d,
        col("x").isin(Double.NaN, 0.0d))) {
      val r = withSparkbloom(t.where(pred))
      assert(r.rows == truth(t.where(pred)), pred)
    }
    assert(withSparkbloom(t.where(col("x") === Double.NaN)).rows.size == 2)
    val absent = withSparkbloom(t.where(col("x") === 2.5d))
    assert(absent.nativeSkipped == 1, absent) // an absent value still prunes
  }

  test("with an index, files it does not cover (added since) are still pruned with their native filters") {
    // Files the index does not know: written as another engine would (no maintenance on write).
    withSQLConf(BloomConf.MaintainOnWrite -> "false") {
      val dir = tempDir("mixed") + "/t"
      spark.range(0, 4000, 1, 2).write.option("parquet.bloom.filter.enabled#id", "true").parquet(dir)
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
      spark.range(4000, 8000, 1, 2).write.mode("append").option("parquet.bloom.filter.enabled#id", "true")
        .option("parquet.block.size", "4096").parquet(dir)
      val t = () => spark.read.parquet(dir)
      val r = withSparkbloom(t().where(col("id") === 6001L))
      assert(r.rows == truth(t().where(col("id") === 6001L)) && r.rows.size == 1)
      val skip = SkippingReport.forPlan(r.df.queryExecution.executedPlan)
      assert(skip.size == 1 && skip.head.filesNotCovered == 2, skip) // the index decided the old files
      assert(r.nativeSkipped > 0, r) // ... and native filters pruned row groups of the new ones
      // A key in an indexed file: the index answers; native filters are not read again for indexed columns.
      val r2 = withSparkbloom(t().where(col("id") === 17L))
      assert(r2.rows == Seq(Row(17L)))
    }
  }

  test("spark.sparkbloom.nativeFilters.enabled=false leaves Spark's scan as it was") {
    spark.conf.set("spark.sparkbloom.nativeFilters.enabled", "false")
    try {
      val df = spark.read.parquet(keyed).where(col("id") === 4321L)
      assert(withIndexEnabled(on = true)(df.queryExecution.executedPlan.toString).contains("Format: Parquet,"))
      assert(collect(df.queryExecution.executedPlan) { case m: BloomScanMetricsExec => m }.isEmpty)
    } finally spark.conf.unset("spark.sparkbloom.nativeFilters.enabled")
  }

  test("EXPLAIN and the scan's SQL metrics show native filtering") {
    val df = spark.read.parquet(keyed).where(col("s") === "k-4242")
    val r = withSparkbloom(df)
    val explained = r.df.queryExecution.executedPlan.toString
    assert(explained.contains("BloomIndexSkipping") && explained.contains("native filters [s = k-4242]"), explained)
    assert(explained.contains("Parquet+Bloom(native filters checked)"), explained)
    val node = collect(r.df.queryExecution.executedPlan) { case m: BloomScanMetricsExec => m }.head
    assert(node.metrics("nativeRowGroupsSkipped").value == r.nativeSkipped && r.nativeSkipped > 0)
    assert(node.metrics("nativeRowGroupsChecked").value > r.nativeSkipped)
    assert(!node.metrics.contains("filesSkipped"), "no index: no index metrics")
  }

  test("a file that vanished or is not Parquet is reported by Spark's reader, not hidden") {
    val dir = tempDir("broken") + "/t"
    spark.range(0, 100, 1, 1).write.option("parquet.bloom.filter.enabled#id", "true").parquet(dir)
    val df = spark.read.parquet(dir).where(col("id") === 5L)
    val f = new java.io.File(dir).listFiles().find(_.getName.endsWith(".parquet")).get
    java.nio.file.Files.write(f.toPath, "not parquet at all".getBytes)
    val e = intercept[Exception](withIndexEnabled(on = true)(df.collect()))
    assert(e.toString.toLowerCase.contains("parquet") ||
        Option(e.getCause).exists(_.toString.toLowerCase.contains("parquet")), e)
  }

  test(
    "review fixes: non-deterministic conditions, ambiguous names, field ids, pushdown off, foreign INT96 and rebase") {
    val t = () => spark.read.parquet(keyed)
    // with a non-deterministic conjunct, sparkbloom prunes on no more than Spark itself pushes to the scan
    val nd = withSparkbloom(t().where(rand(42) < 2.0 && col("id") === 4321L))
    val pushedByspark = nd.df.queryExecution.executedPlan.toString.contains("EqualTo(id,4321)")
    assert(nd.rows.size == 1 && (nd.nativeSkipped == 0 || pushedByspark), nd)
    // Parquet filter pushdown off: no row-group pruning by native filters either
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try assert(withSparkbloom(t().where(col("id") === 4321L)).nativeChecked == 0)
    finally spark.conf.unset("spark.sql.parquet.filterPushdown")
    // V2 with field-id matching: names could probe the wrong column, so no native pruning
    val oldV1 = spark.conf.get("spark.sql.sources.useV1SourceList")
    spark.conf.set("spark.sql.sources.useV1SourceList", "")
    spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "true")
    try assert(withSparkbloom(t().where(col("id") === 4321L)).nativeChecked == 0)
    finally {
      spark.conf.unset("spark.sql.parquet.fieldId.read.enabled");
      spark.conf.set("spark.sql.sources.useV1SourceList", oldV1)
    }
    // two fields matching one name case-insensitively: Spark's reader must still raise its error
    val dup = tempDir("dup") + "/t"
    spark.conf.set("spark.sql.caseSensitive", "true")
    try spark.range(0, 100, 1, 1).select(col("id").as("k"), (col("id") + 1000).as("K"))
        .write.option("parquet.bloom.filter.enabled", "true").option("parquet.enable.dictionary", "false").parquet(dup)
    finally spark.conf.unset("spark.sql.caseSensitive")
    val e = intercept[Exception](
      withIndexEnabled(on = true)(spark.read.schema("k BIGINT").parquet(dup).where(col("k") === -7L).collect()))
    assert(e.toString.toLowerCase.contains("duplicate") ||
        Option(e.getCause).exists(_.toString.toLowerCase.contains("duplicate")), e)
    // INT96 written by anything but Spark is never probed (Spark truncates its nanoseconds on read)
    val int96 = org.apache.parquet.schema.Types.optional(
      org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.INT96).named("ts")
    assert(FileEncodings.of(int96, java.util.Collections.emptyMap[String, String]()).isEmpty)
    assert(FileEncodings.of(int96, java.util.Collections.singletonMap("org.apache.spark.version", "4.0.4")).nonEmpty)
    // LEGACY rebase (session or read option) marks other writers' dates and timestamps unprobeable
    assert(!NativeFilters.options(spark, Map.empty).legacyRebaseOfForeignFiles)
    assert(NativeFilters.options(spark, Map("datetimeRebaseMode" -> "LEGACY")).legacyRebaseOfForeignFiles)
    spark.conf.set("spark.sql.parquet.int96RebaseModeInRead", "LEGACY")
    try assert(NativeFilters.options(spark, Map.empty).legacyRebaseOfForeignFiles)
    finally spark.conf.unset("spark.sql.parquet.int96RebaseModeInRead")
  }

  test("a comparison with 0.0 inferred from a join after the rewrite still turns the dictionary filter off") {
    val a = tempDir("infer") + "/a"
    spark.range(0, 500, 1, 1).select(lit(-0.0d).as("x"), col("id")).write.parquet(a) // dictionary-encoded -0.0
    val q = () =>
      spark.read.parquet(a).join(spark.range(0, 1).select(lit(0.0d).as("y")), col("x") === col("y"))
        .where(col("y") === 0.0d).agg(count(lit(1)))
    info(s"Spark alone: ${sparkAlone(q())}")
    assert(withSparkbloom(q()).rows == truth(q()))
  }
}
