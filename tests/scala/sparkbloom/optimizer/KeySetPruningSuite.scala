package sparkbloom.optimizer

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{FileSourceScanExec, FilterExec}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.functions._

import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, KeySource, TableRef}
import sparkbloom.scan.{KeySetFileIndex, KeySetFilter}
import sparkbloom.testing.SparkSessionSuite

/**
 * Key-set pruning on Spark's V1 Parquet source: joins, IN (subquery) and EXISTS skip the files of an indexed
 * table by the keys the other side produces at run time. Every query is compared with sparkbloom off.
 */
class KeySetPruningSuite extends SparkSessionSuite {
  override protected def sparkConf: Map[String, String] =
    Map("spark.sparkbloom.runtimePruning.minTableSize" -> "0")

  private val Files = 40

  /** 40 files, one row group each, of 100 ids; ids 0..3999, `k` a string key, `n` an int with NULLs. */
  private lazy val factDir: String = {
    val dir = tempDir("fact") + "/t"
    spark.range(0, 4000, 1, Files)
      .select(col("id"), concat(lit("k-"), col("id")).as("k"),
        when(col("id") % 97 === 0, lit(null)).otherwise((col("id") * 3).cast("int")).as("n"),
        (col("id") % 5).as("v"))
      .write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("k"), ColumnSpec("n")),
      Map.empty, ifNotExists = false)
    dir
  }
  private def fact: DataFrame = spark.read.parquet(factDir)

  private lazy val dimDir: String = {
    val dir = tempDir("dim") + "/d"
    // keys present in 3 files, one absent key, a NULL, and a duplicate
    spark.createDataFrame(Seq[(java.lang.Long, String, java.lang.Integer, String)](
        (5L, "k-5", 15, "IS"), (2050L, "k-2050", 6150, "IS"), (3999L, "k-3999", 11997, "IS"),
        (99999L, "absent", 1, "IS"), (null, null, null, "IS"), (5L, "k-5", 15, "IS"), (7L, "k-7", 21, "NO")))
      .toDF("did", "dk", "dn", "country")
      .write.parquet(dir)
    dir
  }
  private def dim: DataFrame = spark.read.parquet(dimDir)
  private def isDim: DataFrame = dim.where(col("country") === "IS")

  /** Files read by the scans of the table under a folder named `marker` (the key side's scans left out). */
  private def factRead(o: Outcome, marker: String = "/fact"): Long = collect(o.plan) {
    case s: FileSourceScanExec if s.relation.location.rootPaths.exists(_.toString.contains(marker)) =>
      s.metrics.get("numFiles").map(_.value).getOrElse(0L)
  }.sum

  private def explain(df: DataFrame): String = df.queryExecution.executedPlan.toString

  private val settings: Seq[(String, Seq[(String, String)])] = Seq(
    "AQE, broadcast" -> Seq("spark.sql.adaptive.enabled" -> "true"),
    "AQE, shuffle join" -> Seq("spark.sql.adaptive.enabled" -> "true",
      "spark.sql.autoBroadcastJoinThreshold" -> "-1"),
    "no AQE, broadcast" -> Seq("spark.sql.adaptive.enabled" -> "false"),
    "no AQE, shuffle join" -> Seq("spark.sql.adaptive.enabled" -> "false",
      "spark.sql.autoBroadcastJoinThreshold" -> "-1"))

  for ((name, confs) <- settings) {
    test(s"an inner join reads only the files holding the other side's keys ($name)") {
      withSQLConf(confs: _*) {
        val o = compare(fact.join(isDim, col("id") === col("did")))
        assert(o.on == o.off)
        assert(o.on.size == 4) // 5 twice, 2050, 3999
        assert(factRead(o) == 3, o.plan.toString)
        assert(o.metrics.get("keysProbed").contains(4L), o.metrics) // 5, 2050, 3999, 99999 (NULL never joins)
        assert(o.metrics.get("filesSkipped").contains((Files - 3).toLong), o.metrics)
        assert(o.plan.toString.contains("run-time keys"), o.plan.toString)
      }
    }
  }

  test("string keys, and a join key of another type coerced by Spark, agree and prune") {
    val s = compare(fact.join(isDim, col("k") === col("dk")))
    assert(s.on == s.off && s.on.size == 4 && factRead(s) == 3)
    // int column joined with a bigint key: Spark casts the int side, so that scan is not pruned, never wrong
    val c = compare(fact.join(isDim, col("n") === col("did")))
    assert(c.on == c.off)
    // bigint column joined with an int key: the key side is cast, the column is pruned
    val w = compare(fact.join(isDim, col("id") === col("dn")))
    assert(w.on == w.off && w.on.nonEmpty)
    assert(factRead(w) < Files)
  }

  test("every join type: rows as without the index; preserved and anti sides are never pruned") {
    for (t <- Seq("inner", "left_semi", "left_outer", "right_outer", "full_outer", "left_anti", "cross")) {
      def q1 = fact.join(isDim, col("id") === col("did"), t)
      val o1 = compare(q1)
      assert(o1.on == o1.off, t)
      def q2 = isDim.join(fact, col("id") === col("did"), t)
      val o2 = compare(q2)
      assert(o2.on == o2.off, t)
      val factPrunedIn1 = Set("inner", "left_semi", "right_outer", "cross")
      val factPrunedIn2 = Set("inner", "left_outer", "cross")
      if (!factPrunedIn1(t)) assert(o1.metrics.get("keysProbed").forall(_ == 0L), s"$t: ${o1.metrics}")
      else assert(factRead(o1) == 3, s"$t ${o1.plan}")
      if (!factPrunedIn2(t)) assert(o2.metrics.get("keysProbed").forall(_ == 0L), s"$t: ${o2.metrics}")
      else assert(factRead(o2) == 3, s"$t ${o2.plan}")
    }
  }

  test("<=> matches NULL keys: files holding NULLs are read when the keys hold a NULL") {
    val o = compare(fact.join(dim, col("n") <=> col("dn")))
    assert(o.on == o.off)
    assert(o.on.exists(_.isNullAt(fact.columns.indexOf("n"))), "a NULL n joined the NULL dn")
    val noNull = compare(fact.join(dim.where(col("dn").isNotNull), col("n") <=> col("dn")))
    assert(noNull.on == noNull.off)
  }

  test("IN (subquery), EXISTS and their negations") {
    fact.createOrReplaceTempView("fact"); isDim.createOrReplaceTempView("isdim")
    val in = compare(sql("SELECT * FROM fact WHERE id IN (SELECT did FROM isdim)"))
    assert(in.on == in.off && in.on.size == 3 && factRead(in) == 3)
    val exists = compare(sql("SELECT * FROM fact f WHERE EXISTS (SELECT 1 FROM isdim d WHERE d.dk = f.k)"))
    assert(exists.on == exists.off && exists.on.size == 3 && factRead(exists) == 3)
    val notIn = compare(sql("SELECT * FROM fact WHERE id NOT IN (SELECT did FROM isdim WHERE did IS NOT NULL)"))
    assert(notIn.on == notIn.off && notIn.on.size == 4000 - 3)
    val notExists = compare(sql("SELECT * FROM fact f WHERE NOT EXISTS (SELECT 1 FROM isdim d WHERE d.dk = f.k)"))
    assert(notExists.on == notExists.off && notExists.on.size == 4000 - 3)
    val inOr = compare(sql("SELECT * FROM fact WHERE id IN (SELECT did FROM isdim) OR v = 1"))
    assert(inOr.on == inOr.off)
  }

  test("an empty key side reads no indexed file; a key side over the cap reads everything") {
    val empty = compare(fact.join(dim.where(col("country") === "none"), col("id") === col("did")))
    assert(empty.on == empty.off && empty.on.isEmpty)
    assert(factRead(empty) == 0, empty.plan.toString)
    withSQLConf("spark.sparkbloom.runtimePruning.maxKeys" -> "2") {
      val capped = compare(fact.join(dim.where(col("country") === "IS"), col("id") === col("did")))
      assert(capped.on == capped.off)
      assert(factRead(capped) == Files)
    }
    val big = spark.range(0, 3000).toDF("bid")
    val many = compare(fact.join(big, col("id") === col("bid")))
    assert(many.on == many.off && many.on.size == 3000)
  }

  test("switched off, by the switch or by Spark's dynamic pruning switch, nothing is planned") {
    for (c <- Seq("spark.sparkbloom.runtimePruning.enabled", "spark.sql.optimizer.dynamicPartitionPruning.enabled"))
      withSQLConf(c -> "false") {
        val o = compare(fact.join(isDim, col("id") === col("did")))
        assert(o.on == o.off && factRead(o) == Files, c)
      }
    withSQLConf("spark.sparkbloom.runtimePruning.minTableSize" -> "1g") {
      val o = compare(fact.join(isDim, col("id") === col("did")))
      assert(o.on == o.off && factRead(o) == Files)
    }
  }

  test("Spark's V2 Parquet scan: joins and IN (subquery) read only the files holding the keys") {
    withSQLConf("spark.sql.sources.useV1SourceList" -> "") {
      for (aqe <- Seq("true", "false")) withSQLConf("spark.sql.adaptive.enabled" -> aqe) {
        val o = compare(fact.join(isDim, col("id") === col("did")))
        assert(o.on == o.off && o.on.size == 4)
        assert(o.plan.toString.contains("BatchScan") && o.plan.toString.contains("run-time keys"), o.plan.toString)
        assert(o.metrics.get("keysProbed").contains(4L), o.metrics)
        assert(o.metrics.get("filesSkipped").contains((Files - 3).toLong), o.metrics)
        fact.createOrReplaceTempView("fact2"); isDim.createOrReplaceTempView("isdim2")
        val in = compare(sql("SELECT * FROM fact2 WHERE k IN (SELECT dk FROM isdim2)"))
        assert(in.on == in.off && in.on.size == 3)
        assert(in.metrics.get("filesSkipped").contains((Files - 3).toLong), in.metrics)
        val outer = compare(fact.join(isDim, col("id") === col("did"), "left_outer"))
        assert(outer.on == outer.off && outer.on.size == 4000 + 1)
      }
    }
  }

  /** Rows out of the filters that hold a run-time filter key-set pruning planted, over every such filter. */
  private def keySetFilterRows(o: Outcome): Seq[Long] = collect(o.plan) {
    case f: FilterExec if f.condition.exists(_.isInstanceOf[KeySetFilter]) =>
      f.metrics.get("numOutputRows").map(_.value).getOrElse(-1L)
  }

  // Row by row (no generated code) Spark runs a filter on the executors. A planted run-time filter's subquery did not
  // broadcast its keys there (Spark's own run-time filters are partition filters, evaluated on the driver), so every
  // task failed "... IN dynamicpruning#N has not finished" and sparkbloom failed the user's join. Spark evaluates
  // row by row with code generation off, for a stage wider than spark.sql.codegen.maxFields (100 columns by
  // default), and when a stage's code does not compile.
  for ((how, conf) <- Seq("code generation off" -> ("spark.sql.codegen.wholeStage" -> "false"),
      "a stage wider than codegen.maxFields" -> ("spark.sql.codegen.maxFields" -> "0"));
    (source, v1List) <- Seq("V1" -> "parquet", "V2" -> "")) {
    test(s"row by row ($how), the run-time filter reads its keys and drops rows ($source scan)") {
      for (aqe <- Seq("true", "false")) withSQLConf(conf, "spark.sql.adaptive.enabled" -> aqe,
        "spark.sql.sources.useV1SourceList" -> v1List) {
        val join = compare(fact.join(isDim, col("id") === col("did")))
        assert(join.on == join.off && join.on.size == 4, s"AQE $aqe")
        assert(join.metrics.get("filesSkipped").contains((Files - 3).toLong), join.metrics)
        // The filter itself dropped the rows of the kept files that hold no key (300 read, 3 of them keys): it had
        // the keys, and did not merely keep every row.
        assert(keySetFilterRows(join) == Seq(3L), s"AQE $aqe: ${join.plan}")
        fact.createOrReplaceTempView("fact_rows"); isDim.createOrReplaceTempView("isdim_rows")
        val in = compare(sql("SELECT * FROM fact_rows WHERE k IN (SELECT dk FROM isdim_rows)"))
        assert(in.on == in.off && in.on.size == 3, s"AQE $aqe")
        assert(in.metrics.get("filesSkipped").contains((Files - 3).toLong), in.metrics)
        val nullSafe = compare(fact.join(isDim, col("n") <=> col("dn")))
        assert(nullSafe.on == nullSafe.off, s"AQE $aqe")
      }
    }
  }

  test("keys that do not arrive, or that the probe cannot hash, read every file (Spark's answer, unpruned)") {
    val planned = fact.join(isDim, col("id") === col("did")).queryExecution.optimizedPlan
    val listing = planned.collectFirst {
      case l: LogicalRelation
          if l.relation.isInstanceOf[HadoopFsRelation] &&
            l.relation.asInstanceOf[HadoopFsRelation]
              .location.isInstanceOf[KeySetFileIndex] =>
        l.relation.asInstanceOf[HadoopFsRelation].location
          .asInstanceOf[KeySetFileIndex]
    }.getOrElse(fail(s"no key-set listing planned: $planned"))
    def files(src: KeySource): Int = listing.bind(src).listFiles(Nil, Nil).map(_.files.size).sum
    assert(files(new KeySource { def keys(): Array[Any] = Array[Any](5L, 2050L) }) == 2)
    assert(files(new KeySource {
      def keys(): Array[Any] = throw new IllegalStateException("the key side failed")
    }) == Files)
    assert(files(new KeySource { def keys(): Array[Any] = Array[Any]("not a long") }) == Files)
    assert(listing.listFiles(Nil, Nil).map(_.files.size).sum == Files) // never bound
  }

  test("a file added after the index was built is read") {
    val dir = tempDir("grow") + "/t"
    spark.range(0, 1000, 1, 10).write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id")), Map.empty, ifNotExists = false)
    spark.range(5000, 5010, 1, 1).write.mode("append").parquet(dir)
    val keys = spark.range(5003, 5004).toDF("x")
    val t = spark.read.parquet(dir)
    val o = compare(t.join(keys, col("id") === col("x")))
    assert(o.on == o.off && o.on.size == 1)
    assert(factRead(o, "/grow") == 1)
  }
}
