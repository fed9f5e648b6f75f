package sparkbloom.index

import java.nio.file.{Files, Paths}

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types.LongType

import sparkbloom.api.BloomIndexes
import sparkbloom.index.sliced.{Probers, SlicedProbe}
import sparkbloom.predicate.BloomPredicate
import sparkbloom.sql.CommandOutputAccess
import sparkbloom.testing.SparkSessionSuite

/**
 * The table-wide false-positive budget: Σ p_i over the table stays within `false_reads_per_key`,
 * measured by probing absent keys, not only by the model; explicit fpp, Databricks' per-file fpp, the
 * bits-per-value ceiling, REFRESH sizing and indexes written before the budget existed.
 */
class FppBudgetSuite extends SparkSessionSuite {
  private val Files_ = 100
  private val RowsPerFile = 500

  /** `files` one-row-group files of RowsPerFile unique longs, starting at `from`. */
  private def writeTable(dir: String, files: Int, from: Long = 0, mode: String = "errorifexists"): Unit =
    spark.range(from, from + files.toLong * RowsPerFile, 1, files).select(col("id"), col("id").cast("string").as("s"))
      .write.mode(mode).parquet(dir)

  private def loaded(dir: String, name: String = "ix"): IndexVersion = {
    val conf = spark.sessionState.newHadoopConf()
    val idx = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), name)
    val fs = idx.getFileSystem(conf)
    IndexStore.load(fs, conf, idx, IndexStore.latestMeta(fs, idx)._1.get)
  }

  /** Mean number of row groups a lookup of `id = key` keeps, over `keys`. */
  private def meanKept(index: IndexVersion, keys: Seq[Long]): Double = {
    val probe = Probers.sliced(spark, index, new Probers.Counters)
    keys.map(k => probe.mightMatch(BloomPredicate.In("id", LongType, Seq(k))).cardinality()).sum.toDouble / keys.size
  }

  /** Mean number of row groups an absent key keeps, over `keys` absent keys: the measured false reads per key. */
  private def measuredFalseReads(index: IndexVersion, keys: Int = 2000): Double =
    meanKept(index, (0 until keys).map(i => -1000000000L - i * 7919L))

  /**
   * Mean number of row groups a key the table holds keeps besides its own, over `keys` of them: the measured false
   * reads per present key (ids 0 until `rows`, one per row, spread over the files).
   */
  private def measuredPresentFalseReads(index: IndexVersion, rows: Long, keys: Int = 2000): Double =
    meanKept(index, (0 until keys).map(i => i * 7919L % rows)) - 1

  private def stats(d: IndexDescription, column: String): ColumnStats = d.columnStats.find(_.column == column).get

  test("the model: p_i in proportion to the distinct count, summing to the budget, floored by the ceiling") {
    val sizer = FilterSizer(Map("a" -> FppPolicy.TableBudget(0.1)), Map("a" -> 1000000L), maxBitsPerValue = 32)
    val ndvs = Seq(1000L, 5000L, 994000L)
    assert(math.abs(ndvs.map(n => sizer.targetFpp("a", n, n, n)).sum - 0.1) < 1e-12)
    assert(sizer.targetFpp("a", 1, 1, 1) == sizer.floorFpp)
    assert(sizer.floorFpp > 1e-6 && sizer.floorFpp < 1e-4, s"${sizer.floorFpp}")
    val perFile = FilterSizer(Map("a" -> FppPolicy.PerFile(0.1)), Map.empty, 32)
    assert(math.abs(Seq(100L, 300L).map(r => perFile.targetFpp("a", r, r, 400)).sum - 0.1) < 1e-12)
    assert(FilterSizer(Map("a" -> FppPolicy.PerRowGroup(0.01)), Map.empty, 32).targetFpp("a", 7, 7, 7) == 0.01)
    assert(FilterSizer(Map("a" -> FppPolicy.TableBudget(3.0)), Map("a" -> 10L), 32).targetFpp("a", 10, 10, 10) ==
      FppPolicy.MaxRowGroupFpp)
  }

  test("by default an index keeps the false reads per key within 0.1 over the whole table, as measured") {
    val dir = tempDir("budget") + "/t"
    writeTable(dir, Files_)
    val d = BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)
    assert(d.falseReadsPerKey.contains(0.1) && d.fpp.isEmpty)
    val id = stats(d, "id")
    assert(id.rowGroups == Files_ && id.distinctValues == Files_ * RowsPerFile)
    // The row groups' filters alone meet the budget: rounding block counts up only lowers it; 1.25x the bits
    // at most cannot make it drop below ~0.02.
    val v = loaded(dir)
    val leavesAlone = v.layout.column("id").get.fpp.map(_.toDouble).sum
    assert(leavesAlone <= 0.1 && leavesAlone > 0.02, leavesAlone)
    // The segments' summaries (at most 10% each here, the weakest) only lower it further.
    assert(!v.layout.summaries.isEmpty)
    assert(id.expectedFalseReadsPerKey <= leavesAlone * FilterSizer.MaxSummaryFpp * 1.01, id.toString)
    // Measured over 20,000 absent keys: ~50 row groups in all at ~0.0025 per key.
    val measured = measuredFalseReads(v, keys = 20000)
    assert(math.abs(measured - id.expectedFalseReadsPerKey) < 0.005,
      s"measured $measured, expected ${id.expectedFalseReadsPerKey}")
    // A key the table holds passes its own segment's summary, so the other row groups of that segment are probed
    // without the summary's discount: it reads more in error than an absent key, still within the budget. DESCRIBE
    // gives both figures, the present-key one as measured over 5,000 present keys. The build's 8 tasks wrote 8
    // segments per column here; OPTIMIZE then merges them into one, where a present key pays nearly all of Σ p_i.
    val present = id.expectedFalseReadsPerPresentKey.get
    val measuredPresent = measuredPresentFalseReads(v, Files_.toLong * RowsPerFile, keys = 5000)
    assert(math.abs(measuredPresent - present) < 0.004, s"measured $measuredPresent, expected $present")
    assert(present > id.expectedFalseReadsPerKey && present <= leavesAlone, s"$present, ${id.expectedFalseReadsPerKey}")
    val merged = BloomIndexes.optimize(spark, TableRef.Path(dir), "ix")
    val (mergedAbsent, mergedPresent) =
      (stats(merged, "id").expectedFalseReadsPerKey, stats(merged, "id").expectedFalseReadsPerPresentKey.get)
    val m = loaded(dir)
    assert(m.layout.segments.count(_.column == "id") == 1, m.layout.describeLevels)
    assert(mergedPresent > 5 * mergedAbsent && mergedPresent <= leavesAlone * 1.01, s"$mergedPresent, $mergedAbsent")
    val measuredMerged = measuredPresentFalseReads(m, Files_.toLong * RowsPerFile, keys = 5000)
    assert(math.abs(measuredMerged - mergedPresent) < 0.012, s"measured $measuredMerged, expected $mergedPresent")
    val measuredMergedAbsent = measuredFalseReads(m, keys = 20000)
    assert(measuredMerged > 3 * measuredMergedAbsent, measuredMerged)
    info(f"8 segments: present $present%.4f (measured $measuredPresent%.4f), " +
      f"absent ${id.expectedFalseReadsPerKey}%.4f; " +
      f"1 segment: present $mergedPresent%.4f (measured $measuredMerged%.4f), absent $mergedAbsent%.4f (measured " +
      f"$measuredMergedAbsent%.4f)")
    // Lookups agree with the index off; an absent key reads (almost always) nothing.
    val df = spark.read.parquet(dir)
    val hit = compare(df.where(col("id") === 31337L))
    assert(hit.on == hit.off && hit.on.size == 1 && hit.filesRead == 1)
    val in = compare(df.where(col("s").isin((0 until 50).map(i => (i * 997).toString) ++ Seq("x", "y"): _*)))
    assert(in.on == in.off && in.on.size == 50)
    val rows = CommandOutputAccess.describe(merged)
    assert(rows("False Reads Per Key") == "0.1")
    assert(rows("Expected False Reads Per Key") == f"id: $mergedAbsent%.4g; s: " +
      f"${stats(merged, "s").expectedFalseReadsPerKey}%.4g")
    assert(rows("Expected False Reads Per Present Key") == f"id: $mergedPresent%.4g; s: " +
      f"${stats(merged, "s").expectedFalseReadsPerPresentKey.get}%.4g")
    assert(rows("Sizing") == "id: false_reads_per_key=0.1; s: false_reads_per_key=0.1")
  }

  test("an explicit fpp still means per row group: false reads grow as row groups × fpp") {
    val dir = tempDir("fixed") + "/t"
    writeTable(dir, Files_)
    val d = BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map("fpp" -> "0.01"),
      ifNotExists = false)
    val e = stats(d, "id").expectedFalseReadsPerKey
    assert(e > 0.3 && e <= 1.0, s"$e") // 100 row groups at ≤ 1% (block counts rounded up)
    assert(math.abs(measuredFalseReads(loaded(dir)) - e) < 0.2)
    assert(d.policies == Seq("fpp=0.01 per row group"))
  }

  test("REFRESH INCREMENTAL sizes new row groups for the table as it is now; FULL restores the budget") {
    val dir = tempDir("grow") + "/t"
    writeTable(dir, Files_ / 2)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
    val before = loaded(dir).layout.paths.toSet
    writeTable(dir, Files_ / 2, from = 10000000L, mode = "append")
    val inc = BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
    val index = loaded(dir)
    val l = index.layout
    def bytesPerFile(paths: Iterable[String]) =
      paths.map(p => l.segments(l.columns.head.segment(l.firstRg(l.fileIndex.get(p)))).blocks * 32L).sum / paths.size
    val added = l.paths.toSet -- before
    assert(added.size == Files_ / 2)
    assert(bytesPerFile(added) > bytesPerFile(before), "new row groups get a smaller share of the budget each")
    val e = stats(inc, "id").expectedFalseReadsPerKey
    val full = BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = true)
    val f = stats(full, "id").expectedFalseReadsPerKey
    assert(f <= 0.1)
    assert(e > f * 1.2 && e < 0.2, s"$e vs $f: old row groups keep the share they had in a table half the size")
    val o = compare(spark.read.parquet(dir).where(col("id").isin(10000000L, 3L, -5L)))
    assert(o.on == o.off && o.on.size == 2)
  }

  test("past the bits-per-value ceiling the row groups' filters read more in error, the summaries less; " +
    "DESCRIBE says so") {
    val dir = tempDir("ceiling") + "/t"
    writeTable(dir, Files_)
    spark.conf.set("spark.sparkbloom.maxBitsPerValue", "8")
    val d = try
      BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
    finally spark.conf.unset("spark.sparkbloom.maxBitsPerValue")
    val id = stats(d, "id")
    assert(id.rowGroupsAtCeiling == Files_)
    val v = {
      val conf = spark.sessionState.newHadoopConf()
      val idx = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), "ix")
      val fs = idx.getFileSystem(conf)
      IndexStore.load(fs, conf, idx, IndexStore.latestMeta(fs, idx)._1.get)
    }
    // The row groups' filters alone: over a false row group per key (8 bits per value ≈ 2% each).
    val leavesAlone = v.layout.columns.head.fpp.map(_.toDouble).sum
    assert(leavesAlone > 1.0, leavesAlone)
    // Each segment's summary is capped by the same ceiling (~2%): the model multiplies the two.
    assert(!v.layout.summaries.isEmpty)
    assert(id.expectedFalseReadsPerKey < leavesAlone * 0.05 && id.expectedFalseReadsPerKey > leavesAlone * 0.005,
      s"$id vs $leavesAlone")
    assert(id.bytesPerValue.exists(b => b >= 1.0 && b < 1.2), id.toString) // 8 bits, whole blocks
    assert(CommandOutputAccess.describe(d)("Max Bits Per Value").startsWith("8.0; past it the expected"))
    val o = compare(spark.read.parquet(dir).where(col("id") === 777L))
    assert(o.on == o.off && o.on.size == 1)
  }

  test("SQL: false_reads_per_key per index and per column; fpp and the budget exclude each other") {
    val dir = tempDir("sql") + "/t"
    writeTable(dir, 4)
    spark.sql(
      s"CREATE BLOOM INDEX a ON parquet.`$dir` (id OPTIONS (fpp = 0.001), s) OPTIONS (false_reads_per_key = 0.02)")
    val d = BloomIndexes.describe(spark, TableRef.Path(dir), "a")
    assert(d.policies == Seq("fpp=0.001 per row group", "false_reads_per_key=0.02"))
    assert(stats(d, "s").expectedFalseReadsPerKey <= 0.02)
    val both = intercept[AnalysisException](
      spark.sql(s"CREATE BLOOM INDEX b ON parquet.`$dir` (id) OPTIONS (fpp = 0.01, false_reads_per_key = 0.1)"))
    assert(both.getMessage.contains("either fpp") && both.getMessage.contains("false_reads_per_key"))
    val col = intercept[AnalysisException](
      spark.sql(s"CREATE BLOOM INDEX b ON parquet.`$dir` (id OPTIONS (fpp = 0.01, false_reads_per_key = 0.1))"))
    assert(col.getMessage.contains("Column id"))
    val neg = intercept[AnalysisException](
      spark.sql(s"CREATE BLOOM INDEX b ON parquet.`$dir` (id) OPTIONS (false_reads_per_key = 0)"))
    assert(neg.getMessage.contains("false_reads_per_key must be a positive number"))
    assert(BloomIndexes.list(spark, TableRef.Path(dir)).map(_.name) == Seq("a"),
      "nothing was written for the failed statements")
  }

  test("Databricks' fpp keeps its per-file meaning") {
    val dir = tempDir("dbx") + "/t"
    writeTable(dir, 4)
    spark.sql(s"CREATE BLOOMFILTER INDEX ON parquet.`$dir` FOR COLUMNS (id OPTIONS (fpp = 0.1, numItems = 1000))")
    val d = BloomIndexes.list(spark, TableRef.Path(dir)).head
    assert(d.policies == Seq("fpp=0.1 per file"))
    // 4 files of one row group: each row group gets the whole per-file fpp, so Σ ≈ 4 × (≤ 0.1)
    val e = stats(d, "id").expectedFalseReadsPerKey
    assert(e > 0.1 && e <= 0.4, s"$e")
  }

  test("an index written before the budget existed keeps its per-row-group fpp, loads and refreshes") {
    val dir = tempDir("legacy") + "/t"
    writeTable(dir, 10)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map("fpp" -> "0.01"),
      ifNotExists = false)
    // Rewrite the commit as the first release wrote it: fpp a number on the index and on every column,
    // none of the fields added since.
    val indexDir = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Path(dir)), "ix")
    val commit = Paths.get(new Path(indexDir, "_commits/1.json").toUri)
    val json = IndexStore.mapper.readTree(Files.readAllBytes(commit)).asInstanceOf[
      com.fasterxml.jackson.databind.node.ObjectNode]
    Seq("falseReadsPerKey", "fppScope", "maxBitsPerValue", "columnStats").foreach(json.remove)
    json.get("columns").elements().forEachRemaining { c =>
      val o = c.asInstanceOf[com.fasterxml.jackson.databind.node.ObjectNode]; o.remove("falseReadsPerKey");
      o.remove("fppScope")
    }
    Files.write(commit, IndexStore.mapper.writeValueAsBytes(json))
    IndexStore.invalidate(indexDir)
    val d = BloomIndexes.describe(spark, TableRef.Path(dir), "ix")
    assert(d.columnStats.isEmpty && d.policies == Seq("fpp=0.01 per row group"))
    val o = compare(spark.read.parquet(dir).where(col("id") === 1234L))
    assert(o.on == o.off && o.on.size == 1 && o.filesRead <= 2)
    writeTable(dir, 2, from = 5000000L, mode = "append")
    val r = BloomIndexes.refresh(spark, TableRef.Path(dir), "ix", full = false)
    assert(r.policies == Seq("fpp=0.01 per row group") && r.filesNotCovered == 0)
  }
}
