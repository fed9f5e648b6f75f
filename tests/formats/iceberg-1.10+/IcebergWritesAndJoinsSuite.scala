package sparkbloom.formats.iceberg

import java.nio.file.{Files => NioFiles}

import org.apache.spark.sql.{Row, SQLContext}
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.api.BloomIndexes
import sparkbloom.index.{
  ColumnSpec, IndexDescription, IndexManager, IndexStore, IndexVersion, StoredIndex, TableFormat, TableRef
}
import sparkbloom.testing.StreamShims.MemoryStream
import sparkbloom.write.{BackgroundMaintenance, MaintainOnWrite}

/**
 * The writes and joins of an Iceberg lake.
 *
 * Key-set pruning of Iceberg scans: a join, an `IN (subquery)` and a left semi join read only the data files whose
 * filters may hold one of the keys the other side gives at run time; so do MERGE, UPDATE and DELETE by a source's
 * keys (copy-on-write: Spark's group-filter query; merge-on-read: the operation's read). The preserved side of an
 * outer join, and a MERGE with `WHEN NOT MATCHED BY SOURCE`, are never pruned. Every query and DML is compared with
 * sparkbloom off.
 *
 * Maintenance on write for Iceberg tables: appends, overwrites and the rewrites of MERGE, UPDATE and DELETE, in
 * copy-on-write and merge-on-read tables, and `rewrite_data_files`, leave no data file uncovered when they return, the
 * streaming sink's batches none after their background refresh; every lookup after them answers as sparkbloom off
 * does, on a twin table written the same way without an index.
 */
class IcebergWritesAndJoinsSuite extends AnyFunSuite with IcebergSpark {
  override protected def formatConf(warehouse: String): Map[String, String] =
    super.formatConf(warehouse) + ("spark.sparkbloom.runtimePruning.minTableSize" -> "0")

  private def modes(mode: String): String =
    s"'format-version' = '2', 'write.distribution-mode' = 'none', 'write.delete.mode' = '$mode', " +
      s"'write.update.mode' = '$mode', 'write.merge.mode' = '$mode'"

  private def described(table: String): IndexDescription = BloomIndexes.describe(spark, TableRef.Catalog(table), "ix")

  private def sorted(table: String): Seq[Row] =
    withIndexEnabled(on = false)(spark.table(table).collect().toSeq.sortBy(_.toString))

  /** Rows `from` until `until` (k = 'u-<id>') in `files` files. */
  private def rowsOf(from: Long, until: Long, files: Int) =
    spark.range(from, until, 1, files).selectExpr("id", "concat('u-', cast(id as string)) as k", "id % 7 as v")

  /** Copy-on-write Iceberg table `t` of rows 0 until `rows` in `files` files, with bloom index ix on k. */
  private def indexedTable(t: String, rows: Long, files: Int): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    sql(s"CREATE TABLE $t (id BIGINT, k STRING, v BIGINT) USING iceberg TBLPROPERTIES (${modes("copy-on-write")})")
    rowsOf(0, rows, files).writeTo(t).append()
    sql(s"CREATE BLOOM INDEX ix ON $t (k)")
  }

  private def lookup(table: String, key: String, expected: Int): Long = {
    val o = compare(spark.table(table).where(s"k = '$key'"))
    assert(o.on == o.off && o.on.size == expected, s"$table k = $key: ${o.on} / ${o.off}")
    assert(o.skipping.nonEmpty, s"$table k = $key was not pruned: ${o.plan}")
    o.kept
  }

  for (mode <- Seq("copy-on-write", "merge-on-read")) test(s"appends, MERGE, UPDATE and DELETE ($mode) are covered") {
    val on = s"ice.db.m_${mode.take(1)}_on"
    val off = s"ice.db.m_${mode.take(1)}_off"
    sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    for (t <- Seq(on, off)) {
      sql(s"CREATE TABLE $t (id BIGINT, k STRING, v BIGINT) USING iceberg TBLPROPERTIES (${modes(mode)})")
      rowsOf(0, 3000, 12).writeTo(t).append()
    }
    sql(s"CREATE BLOOM INDEX ix ON $on (k)")
    spark.range(0, 20).selectExpr("concat('u-', cast(id * 150 + if(id >= 10, 5000, 0) as string)) as key",
      "id as nv").createOrReplaceTempView("src")
    def both(stmt: String => String): Unit = {
      sql(stmt(on))
      withIndexEnabled(on = false)(sql(stmt(off)))
      assert(sorted(on) == sorted(off), stmt(on))
      val d = described(on)
      assert(d.filesNotCovered == 0 && d.filesCovered == d.filesInTable, s"${stmt(on)}: $d")
    }
    both(t => s"INSERT INTO $t SELECT id, concat('u-', cast(id as string)), 0 FROM range(3000, 3200, 1, 3)")
    assert(lookup(on, "u-3100", 1) <= 2)
    both(t => s"""MERGE INTO $t t USING src s ON t.k = s.key
                 |WHEN MATCHED THEN UPDATE SET v = s.nv
                 |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (-1, s.key, s.nv)""".stripMargin)
    assert(lookup(on, "u-6500", 1) <= 2) // inserted by the MERGE
    both(t => s"UPDATE $t SET k = 'changed-' || k WHERE id % 1000 = 7")
    assert(lookup(on, "changed-u-1007", 1) <= 2)
    both(t => s"DELETE FROM $t WHERE id % 500 = 1")
    assert(lookup(on, "u-1501", 0) <= 3)
    assert(lookup(on, "u-2999", 1) <= 3)
  }

  test("rewrite_data_files is covered when it returns (Iceberg's commit event, no plan to wrap)") {
    val t = "ice.db.compacted"
    indexedTable(t, 2000, 10)
    val before = sorted(t)
    val filesBefore = described(t).filesInTable
    sql(s"CALL ice.system.rewrite_data_files(table => 'db.compacted', options => map('min-input-files', '2'))")
    val d = described(t)
    assert(d.filesInTable < filesBefore, d) // compacted: every file is new
    assert(d.filesNotCovered == 0 && d.filesCovered == d.filesInTable && d.filesDeleted == 0, d)
    assert(sorted(t) == before)
    assert(lookup(t, "u-1500", 1) <= 2)
    assert(lookup(t, "u-9999", 0) <= 1)
  }

  test("after a commit the index takes the files its snapshots added and removed, without listing the table") {
    val t = "ice.db.logged"
    indexedTable(t, 1200, 6)
    val ref = TableRef.Catalog(t)
    /** The index brought up to date from the snapshots by the maintenance of a write; listing the table fails it. */
    def fromSnapshots(): IndexDescription = {
      val r = BloomIndexes.resolve(spark, ref, refresh = true)
      IndexManager.update(spark, r.copy(listing = () => fail("the table was listed whole")), "ix", full = false,
        fromLog = true)
      val d = described(t)
      assert(d.snapshotCovered == d.snapshotNow && d.filesNotCovered == 0 && d.filesDeleted == 0, d)
      assert(d.filesCovered == d.filesInTable, d)
      d
    }
    withoutMaintenance {
      rowsOf(1200, 1500, 3).writeTo(t).append()
      rowsOf(1500, 1600, 2).writeTo(t).append() // two snapshots read at once
    }
    assert(fromSnapshots().filesInTable == 11)
    assert(lookup(t, "u-1550", 1) <= 2)
    withoutMaintenance(sql(s"DELETE FROM $t WHERE id % 100 = 3")) // copy-on-write: files replaced
    fromSnapshots()
    assert(lookup(t, "u-1203", 0) <= 2)
    withoutMaintenance(
      sql(s"CALL ice.system.rewrite_data_files(table => 'db.logged', options => map('min-input-files', '2'))"))
    assert(fromSnapshots().filesInTable < 11)
    assert(lookup(t, "u-1199", 1) <= 1)
    // A snapshot that is no ancestor of the current one (after a rollback) is not read from: the table is listed.
    val first = spark.sql(s"SELECT snapshot_id FROM $t.snapshots ORDER BY committed_at").head().getLong(0)
    withoutMaintenance(sql(s"CALL ice.system.rollback_to_snapshot('db.logged', $first)"))
    val r = BloomIndexes.resolve(spark, ref, refresh = true)
    assert(r.changesSince(described(t).snapshotCovered.get).isEmpty)
    MaintainOnWrite.afterTableWrite(spark, Seq(TableFormat.Written(r.root, ref)))
    val d = described(t)
    assert(d.snapshotCovered == d.snapshotNow && d.filesNotCovered == 0 && d.filesInTable == 6, d)
    assert(lookup(t, "u-1550", 0) <= 1)
    assert(lookup(t, "u-1150", 1) <= 1)
  }

  test("an append's own write tasks index it: no column chunk read after the write, the filters a build makes") {
    val t = "ice.db.intask"
    sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    sql(s"CREATE TABLE $t (id BIGINT, k STRING, i INT, bin BINARY, v BIGINT) USING iceberg TBLPROPERTIES (" +
      s"${modes("copy-on-write")}, 'write.parquet.row-group-size-bytes' = '8192')")
    /** Rows of every type the tasks hash, with nulls (every 7th id, every 5th binary). */
    def typed(from: Long, until: Long, files: Int) =
      spark.range(from, until, 1, files).select(when(col("id") % 7 =!= 0, col("id")).as("id"),
        concat(lit("u-"), col("id")).as("k"), (col("id") * 3).cast("int").as("i"),
        when(col("id") % 5 =!= 0, concat(lit("b"), col("id")).cast("binary")).as("bin"), (col("id") % 7).as("v"))
    typed(0, 3000, 3).writeTo(t).append()
    val cols = Seq("id", "k", "i", "bin")
    BloomIndexes.create(spark, TableRef.Catalog(t), "ix", cols.map(ColumnSpec(_)), Map("fpp" -> "0.01"),
      ifNotExists = false)
    val before = described(t)
    val read = chunksRead
    typed(10000, 16000, 3).writeTo(t).append()
    typed(20000, 21000, 2).createOrReplaceTempView("more")
    val insert = sql(s"INSERT INTO $t SELECT * FROM more")
    assert(chunksRead == read, "no column chunk was read after the writes")
    assert(insert.queryExecution.executedPlan.toString.contains("in write tasks"), insert.queryExecution.executedPlan)
    val after = described(t)
    assert(after.filesNotCovered == 0 && after.filesInTable == 8 && after.version == before.version + 2, after)
    assert(after.snapshotCovered == after.snapshotNow, after) // each append's snapshot is recorded as covered
    def loaded(name: String): IndexVersion = {
      val conf = spark.sessionState.newHadoopConf()
      val dir = IndexManager.indexDir(spark, BloomIndexes.resolve(spark, TableRef.Catalog(t)), name)
      val fs = dir.getFileSystem(conf)
      IndexStore.load(fs, conf, dir, IndexStore.latestMeta(fs, dir)._1.get)
    }
    val grown = loaded("ix").layout
    assert(grown.numRowGroups > grown.numFiles, "several row groups per file")
    // A build over the same files with the same sizing makes the same filters.
    BloomIndexes.create(spark, TableRef.Catalog(t), "ref", cols.map(ColumnSpec(_)), Map("fpp" -> "0.01"),
      ifNotExists = false)
    val (x, y) = (loaded("ix"), loaded("ref"))
    assert(x.layout.paths.toSeq.sorted == y.layout.paths.toSeq.sorted)
    for (f <- 0 until x.layout.numFiles; c <- cols) {
      val g = y.layout.fileIndex.get(x.layout.paths(f))
      val rgs = x.layout.firstRg(f + 1) - x.layout.firstRg(f)
      assert(rgs == y.layout.firstRg(g + 1) - y.layout.firstRg(g))
      for (o <- 0 until rgs) {
        val (rx, ry) = (x.layout.firstRg(f) + o, y.layout.firstRg(g) + o)
        val (cx, cy) = (x.layout.column(c).get, y.layout.column(c).get)
        val what = s"$c, ${x.layout.paths(f)} row group $o"
        assert(cx.nonNull(rx) == cy.nonNull(ry) && cx.ndv(rx) == cy.ndv(ry) && cx.flags(rx) == cy.flags(ry), what)
        assert(java.util.Arrays.equals(StoredIndex.filterBytes(x, c, rx), StoredIndex.filterBytes(y, c, ry)),
          s"$what: filter bytes differ")
      }
    }
    val table = spark.table(t)
    for (pred <- Seq(col("id") === 12345L, col("k") === "u-20500", col("i") === 12346 * 3,
        col("bin") === lit("b12346").cast("binary"), col("id") === 12348L, col("k") === "absent")) {
      val o = compare(table.where(pred))
      assert(o.on == o.off, s"$pred: ${o.skipping}")
    }

    // A task that writes several files (a partitioned table, fanout) cannot tell which rows went where: the write
    // is covered by the refresh after its commit instead.
    val p = "ice.db.intask_parted"
    sql(s"CREATE TABLE $p (id BIGINT, k STRING, v BIGINT) USING iceberg PARTITIONED BY (v) TBLPROPERTIES (" +
      s"${modes("copy-on-write")}, 'write.spark.fanout.enabled' = 'true')")
    rowsOf(0, 700, 2).writeTo(p).append()
    sql(s"CREATE BLOOM INDEX ix ON $p (k)")
    rowsOf(700, 1400, 2).writeTo(p).append()
    val parted = described(p)
    assert(parted.filesInTable == 28 && parted.filesNotCovered == 0 && parted.filesCovered == 28, parted)
    assert(lookup(p, "u-1000", 1) <= 2)
  }

  /** Column chunks this JVM has read to index them (local mode: the tasks' too). */
  private def chunksRead: Long = {
    import sparkbloom.parquet.ChunkHasher.Counters
    Counters.reader.get + Counters.dictionary.get + Counters.plain.get
  }

  test("a write sparkbloom is not told of is caught up by the next lookup in the background") {
    val t = "ice.db.caught"
    indexedTable(t, 2000, 10)
    // a session with maintenance off writes, as another engine would
    withSQLConf("spark.sparkbloom.maintainOnWrite.enabled" -> "false") {
      rowsOf(2000, 2400, 4).writeTo(t).append()
    }
    assert(described(t).filesNotCovered == 4, described(t))
    withSQLConf("spark.sparkbloom.maintainOnWrite.refreshOnRead" -> "true") {
      val o = compare(spark.table(t).where("k = 'u-2300'"))
      assert(o.on == o.off && o.on.size == 1, o.skipping)
      assert(BackgroundMaintenance.await(spark, 60000), "the queued refresh ran")
    }
    val caught = described(t)
    assert(caught.filesNotCovered == 0 && caught.filesCovered == caught.filesInTable, caught)
    assert(lookup(t, "u-2300", 1) <= 2)
  }

  test("Iceberg's streaming sink: each micro-batch's files are indexed before the batch ends") {
    implicit val ctx: SQLContext = spark.sqlContext
    import spark.implicits._
    val t = "ice.db.streamed"
    indexedTable(t, 500, 2)
    val input = MemoryStream[Long]
    val checkpoint = NioFiles.createTempDirectory("ice-stream").toString
    val query = input.toDF().selectExpr("value as id", "concat('u-', cast(value as string)) as k", "value % 7 as v")
      .writeStream.format("iceberg").outputMode("append").option("checkpointLocation", checkpoint).toTable(t)
    // each batch waits, right after its commit, for its refresh
    val uncovered = try {
      for (batch <- 1 to 4) yield {
        input.addData((batch * 1000L) until (batch * 1000L + 100))
        query.processAllAvailable()
        described(t).filesNotCovered
      }
    } finally query.stop()
    assert(uncovered.forall(_ == 0), uncovered)
    assert(BackgroundMaintenance.await(spark, 60000), "the queued refreshes ran")
    val d = described(t)
    assert(d.filesNotCovered == 0 && d.filesInTable == d.filesCovered && d.filesInTable >= 6, d)
    assert(lookup(t, "u-3050", 1) <= 2)
    assert(lookup(t, "u-3150", 0) <= 2)
  }

  // ---------------------------------------------------------------------------------------------
  // Key-set pruning

  private val Files = 60

  /** 60 files x 50 rows; keys spread so that min/max statistics cannot prune them. */
  private lazy val table: String = {
    sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    sql("""CREATE TABLE ice.db.ks (id BIGINT, k STRING, v BIGINT) USING iceberg TBLPROPERTIES (
          |'format-version' = '2', 'write.distribution-mode' = 'none')""".stripMargin)
    spark.range(0, 3000, 1, Files).selectExpr("id", "concat('u-', cast((id * 7919) % 3000 as string)) as k",
      "id % 7 as v").writeTo("ice.db.ks").append()
    sql("CREATE BLOOM INDEX ix ON ice.db.ks (k)")
    "ice.db.ks"
  }

  private def keyFrame(values: String*) = spark.createDataFrame(values.map(Tuple1(_))).toDF("key")

  test("a join with an Iceberg table reads only the files holding the keys") {
    val o = compare(spark.table(table).join(keyFrame("u-17", "u-2500", "absent"), col("k") === col("key")))
    assert(o.on == o.off && o.on.size == 2)
    assert(o.metrics.get("keysProbed").contains(3L), o.metrics)
    assert(o.skipping.exists(s => s.filesTotal == Files && s.filesKept <= 4), o.skipping)
    assert(o.plan.toString.contains("run-time keys"), o.plan.toString)
  }

  test("IN (subquery) and a left semi join are pruned; duplicate and NULL keys change nothing") {
    keyFrame("u-5", "u-5", "u-2999", null).createOrReplaceTempView("wanted")
    for (q <- Seq(s"SELECT * FROM $table WHERE k IN (SELECT key FROM wanted)",
        s"SELECT * FROM $table t LEFT SEMI JOIN wanted w ON t.k = w.key")) {
      val o = compare(sql(q))
      assert(o.on == o.off && o.on.size == 2, q)
      assert(o.skipping.exists(s => s.filesTotal == Files && s.filesKept <= 4), s"$q: ${o.skipping}")
    }
  }

  test("the preserved side of an outer join and an anti join are read whole") {
    val left = compare(spark.table(table).join(keyFrame("u-17"), col("k") === col("key"), "left_outer"))
    assert(left.on == left.off && left.on.size == 3000)
    assert(left.skipping.forall(s => s.filesKept == s.filesTotal), left.skipping)
    val anti = compare(spark.table(table).join(keyFrame("u-17"), col("k") === col("key"), "left_anti"))
    assert(anti.on == anti.off && anti.on.size == 2999)
    assert(anti.skipping.forall(s => s.filesKept == s.filesTotal), anti.skipping)
  }

  /** Lookups planned and files skipped through the table's index while `f` ran (DESCRIBE's usage figures). */
  private def skippedDuring(table: String)(f: => Unit): (Long, Long) = {
    def usage = described(table).usage
    val before = usage
    f
    val after = usage
    (after.lookups - before.lookups, after.filesSkipped - before.filesSkipped)
  }

  /**
   * Twin tables `on` and `off` of 60 files x 50 rows in `mode`, `k` (and `n`, when `withN`) unique per row and spread
   * over all files (no file's min/max statistics can skip a key); `on` indexed on `indexed`.
   */
  private def twins(on: String, off: String, mode: String, withN: Boolean, indexed: String): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
    for (t <- Seq(on, off)) {
      sql(s"CREATE TABLE $t (id BIGINT, k STRING, v BIGINT${if (withN) ", n BIGINT" else ""}) USING iceberg " +
        s"TBLPROPERTIES (${modes(mode)})")
      spark.range(0, 3000, 1, Files).selectExpr(Seq("id", "concat('u-', cast((id * 7919) % 3000 as string)) as k",
        "id % 7 as v") ++ (if (withN) Seq("(id * 7919 + 1) % 3000 as n") else Nil): _*).writeTo(t).append()
    }
    sql(s"CREATE BLOOM INDEX ix ON $on ($indexed)")
  }

  /**
   * Each (statement, rows in the table after it) run on `on` with sparkbloom and on `off` without: the tables equal
   * after each, each statement planned a lookup of `on`'s index that skipped at least `minSkipped` files, and no
   * file of `on` is left uncovered.
   */
  private def runTwins(on: String, off: String, forms: Seq[(String => String, Int)], minSkipped: Int): Unit =
    for ((stmt, expected) <- forms) {
      val (lookups, skipped) = skippedDuring(on)(sql(stmt(on)))
      withIndexEnabled(on = false)(sql(stmt(off)))
      assert(sorted(on) == sorted(off), stmt(on))
      assert(sorted(on).size == expected, stmt(on))
      assert(lookups >= 1 && skipped >= minSkipped, s"${stmt(on)}: lookups $lookups, skipped $skipped")
      assert(described(on).filesNotCovered == 0, stmt(on))
    }

  for (mode <- Seq("copy-on-write", "merge-on-read"))
    test(s"DELETE, UPDATE and MERGE by literal keys ($mode) skip the files without a key; the tables end equal") {
      val on = s"ice.db.l_${mode.take(1)}_on"
      val off = s"ice.db.l_${mode.take(1)}_off"
      twins(on, off, mode, withN = true, indexed = "k, n")
      // (statement, rows in the table after it): each changes rows, so an unpruned and a wrongly pruned run differ
      val forms = Seq[(String => String, Int)](
        // int literals against the bigint column (Spark's coercion makes them bigint literals), mid-range: every
        // file's min/max of n spans them, so Iceberg's own statistics keep every file
        (t => s"DELETE FROM $t WHERE n IN (1501, 1503)", 2998),
        (t => s"UPDATE $t SET v = 45 WHERE n = 1507", 2998),
        (t => s"DELETE FROM $t WHERE k = 'u-3'", 2997),
        (t => s"DELETE FROM $t WHERE k IN ('u-5', 'u-7', 'absent', NULL)", 2995),
        (t => s"DELETE FROM $t WHERE k <=> 'u-9' AND v >= 0", 2994),
        (t => s"UPDATE $t SET v = 42 WHERE k = 'u-11'", 2994),
        (t => s"UPDATE $t SET v = 43 WHERE k IN ('u-13', 'u-17') AND id >= 0", 2994),
        (t => s"MERGE INTO $t t USING (SELECT 1 AS one) s ON t.k = 'u-19' WHEN MATCHED THEN DELETE", 2993),
        (t =>
            s"MERGE INTO $t t USING (SELECT 1 AS one) s ON t.k IN ('u-23', 'u-29') " +
              "WHEN MATCHED THEN UPDATE SET v = 44", 2993))
      runTwins(on, off, forms, minSkipped = Files - 6) // 1 to 3 keys keep at most a few of the 60 files
      assert(sorted(on).count(r => Set(42L, 43L, 44L, 45L).contains(r.getLong(2))) == 6)
      if (mode == "merge-on-read") {
        // Shown on the scan in the plan Spark's SQL tab shows (the final adaptive plan: EXPLAIN shows the plan
        // before the query stages are planned, where the keys are not bound yet).
        sql(s"DELETE FROM $on WHERE k IN ('u-31', 'u-37')")
        def plans = spark.sharedState.statusStore.executionsList().map(_.physicalPlanDescription)
        org.scalatest.concurrent.Eventually.eventually(
          org.scalatest.concurrent.Eventually.timeout(org.scalatest.time.Span(20, org.scalatest.time.Seconds))) {
          assert(plans.exists(_.contains("k IN (2 literal keys)")), plans.lastOption)
        }
      }
    }

  for (mode <- Seq("copy-on-write", "merge-on-read"))
    test(s"MERGE, UPDATE and DELETE by run-time keys ($mode) skip the files without a key; the tables end equal") {
      val on = s"ice.db.x_${mode.take(1)}_on"
      val off = s"ice.db.x_${mode.take(1)}_off"
      twins(on, off, mode, withN = false, indexed = "k")
      // duplicate and NULL keys; 5 keys present and 5 new in `src`
      keyFrame("u-3", "u-3", "u-1999", "gone", null).createOrReplaceTempView("erasures")
      spark.range(0, 10).selectExpr("concat('u-', cast(id * 71 % 3000 + if(id >= 5, 5000, 0) as string)) " +
          "as key", "id as nv").createOrReplaceTempView("src")
      // (statement, rows in the table after it): each changes rows, so an unpruned and a wrongly pruned run differ
      val pruned = Seq[(String => String, Int)](
        (t => s"DELETE FROM $t WHERE k IN (SELECT key FROM erasures)", 2998),
        (t => s"MERGE INTO $t t USING erasures e ON t.k = e.key WHEN MATCHED THEN UPDATE SET v = -7", 2998),
        (t => s"""MERGE INTO $t t USING src s ON t.k = s.key
                 |WHEN MATCHED THEN UPDATE SET v = s.nv
                 |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (-1, s.key, s.nv)""".stripMargin, 3003),
        (t => s"UPDATE $t SET v = 99 WHERE k IN (SELECT key FROM src)", 3003),
        (t => s"DELETE FROM $t t WHERE EXISTS (SELECT 1 FROM src s WHERE s.key = t.k AND s.nv < 7)", 2996))
      // copy-on-write prunes every form through Spark's one group-filter query: three forms there, all five in the
      // merge-on-read table, whose own read is what sparkbloom prunes
      val forms = if (mode == "copy-on-write") Seq(pruned(0), pruned(2), pruned(3)) else pruned
      runTwins(on, off, forms, minSkipped = Files - 12) // 5 to 10 keys keep at most about 10 of the 60 files
      // the UPDATE set src's 10 keys (5 present, 5 the MERGE inserted); in merge-on-read the EXISTS then deleted 7
      assert(sorted(on).count(_.getLong(2) == 99L) == (if (mode == "merge-on-read") 3 else 10))
      // a clause over unmatched target rows reads every file
      val bySource = (t: String) =>
        s"""MERGE INTO $t t USING src s ON t.k = s.key WHEN MATCHED THEN UPDATE SET v = 0
           |WHEN NOT MATCHED BY SOURCE AND t.v = 3 THEN UPDATE SET v = 33""".stripMargin
      val (_, skippedBySource) = skippedDuring(on)(sql(bySource(on)))
      withIndexEnabled(on = false)(sql(bySource(off)))
      assert(sorted(on) == sorted(off))
      assert(sorted(on).exists(_.getLong(2) == 33L))
      assert(skippedBySource == 0, s"NOT MATCHED BY SOURCE must read every file: $skippedBySource")
    }
}
