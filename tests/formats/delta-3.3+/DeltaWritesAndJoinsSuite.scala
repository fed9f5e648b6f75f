package sparkbloom.formats.delta

import java.nio.file.{Files => NioFiles}

import org.apache.spark.sql.Row
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, IndexDescription, IndexManager, TableFormat, TableRef}
import sparkbloom.testing.StreamShims.MemoryStream
import sparkbloom.testing.TestShims
import sparkbloom.write.{BackgroundMaintenance, MaintainOnWrite}

/**
 * The writes and joins of a Delta lake. Maintenance on write: Delta's own writes (appends by path and by catalog
 * name, INSERT, MERGE, UPDATE, DELETE, OPTIMIZE, and its streaming sink) leave no file of the table uncovered, and
 * every lookup after them answers as sparkbloom off does.
 *
 * Key-set pruning on real Delta tables (column mapping, deletion vectors): joins read only the files holding
 * the keys, and MERGE's pass that finds the touched files skips the others. Every DML runs on two identical
 * tables, one with sparkbloom on and one off, and the tables must then hold the same rows.
 */
class DeltaWritesAndJoinsSuite extends AnyFunSuite with DeltaSpark {
  override protected def formatConf(warehouse: String): Map[String, String] =
    super.formatConf(warehouse) + ("spark.sparkbloom.runtimePruning.minTableSize" -> "0")

  private val Files = 60

  /** A Delta table `name` of 60 files x 50 rows; `k` keys spread so min/max statistics cannot prune them. */
  private def create(name: String, indexed: Boolean): Unit = {
    sql(s"DROP TABLE IF EXISTS $name")
    sql(s"""CREATE TABLE $name (id BIGINT, k STRING, v BIGINT) USING delta TBLPROPERTIES (
           |'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true')""".stripMargin)
    spark.range(0, 3000, 1, Files).selectExpr("id", "concat('u-', cast((id * 7919) % 3000 as string)) as k",
      "id % 7 as v").write.format("delta").mode("append").saveAsTable(name)
    if (indexed) sql(s"CREATE BLOOM INDEX ix ON $name (k)")
  }

  private def rows(table: String): Seq[Row] =
    withIndexEnabled(on = false)(spark.table(table).collect().toSeq.sortBy(_.toString))

  /** Lookups planned and files skipped through the table's index while `f` ran (DESCRIBE's usage figures). */
  private def skippedDuring(table: String)(f: => Unit): (Long, Long) = {
    def usage = BloomIndexes.describe(spark, TableRef.Catalog(table), "ix").usage
    val before = usage
    f
    val after = usage
    (after.lookups - before.lookups, after.filesSkipped - before.filesSkipped)
  }

  test("a join with a Delta table reads only the files holding the keys") {
    create("dj", indexed = true)
    val keys = spark.createDataFrame(Seq(Tuple1("u-17"), Tuple1("u-2500"), Tuple1("absent"))).toDF("key")
    val o = compare(spark.table("dj").join(keys, col("k") === col("key")))
    assert(o.on == o.off && o.on.size == 2)
    assert(o.metrics.get("keysProbed").contains(3L), o.metrics)
    assert(o.skipping.exists(s => s.filesTotal == Files && s.filesKept <= 4), o.skipping)
    assert(o.plan.toString.contains("KeySetDeltaFileIndex"), o.plan.toString)
  }

  test("MERGE upsert: the touched-file pass skips files without a key; the table equals the unindexed MERGE") {
    create("m_on", indexed = true); create("m_off", indexed = false)
    // 5 keys present, 5 new (k keys keep about k x 1.1 of the 60 row groups: pruning is planned under 50%)
    val src = spark.range(0, 10).selectExpr("concat('u-', cast(id * 71 % 3000 + if(id >= 5, 5000, 0) as string)) " +
        "as key", "id as nv")
    src.createOrReplaceTempView("src")
    val merge = (t: String) =>
      s"""MERGE INTO $t t USING src s ON t.k = s.key
         |WHEN MATCHED THEN UPDATE SET v = s.nv
         |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (-1, s.key, s.nv)""".stripMargin
    val (lookups, skipped) = skippedDuring("m_on")(sql(merge("m_on")))
    withIndexEnabled(on = false)(sql(merge("m_off")))
    assert(rows("m_on") == rows("m_off"))
    assert(lookups >= 1 && skipped >= Files - 8, s"lookups $lookups, skipped $skipped")
    // Delta's own account of the MERGE: the source read once, the same rows updated and inserted as without the index
    val metrics = Seq("numSourceRows", "numTargetRowsUpdated", "numTargetRowsInserted", "numOutputRows")
    def merged(t: String): Map[String, String] =
      sql(s"DESCRIBE HISTORY $t LIMIT 1").head().getAs[scala.collection.Map[String, String]]("operationMetrics")
        .filter { case (k, _) => metrics.contains(k) }.toMap
    assert(merged("m_on") == merged("m_off") && merged("m_on")("numSourceRows") == "10", merged("m_on"))
    // the same with a shuffle join (no broadcast for the run-time keys to reuse)
    spark.range(20, 30).selectExpr("concat('u-', cast(id * 71 % 3000 + if(id >= 25, 5000, 0) as string)) as key",
      "id as nv").createOrReplaceTempView("src")
    withSQLConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      sql(merge("m_on"))
      withIndexEnabled(on = false)(sql(merge("m_off")))
    }
    assert(rows("m_on") == rows("m_off"))
    assert(merged("m_on") == merged("m_off") && merged("m_on")("numSourceRows") == "10", merged("m_on"))
  }

  test(
    "MERGE ... WHEN MATCHED THEN DELETE (an erasure) equals the unindexed one; NOT MATCHED BY SOURCE is not pruned") {
    create("g_on", indexed = true); create("g_off", indexed = false)
    spark.createDataFrame(Seq(Tuple1("u-3"), Tuple1("u-1999"), Tuple1("gone"))).toDF("key")
      .createOrReplaceTempView("erasures")
    val erase = (t: String) => s"MERGE INTO $t t USING erasures e ON t.k = e.key WHEN MATCHED THEN DELETE"
    val (_, skipped) = skippedDuring("g_on")(sql(erase("g_on")))
    withIndexEnabled(on = false)(sql(erase("g_off")))
    assert(rows("g_on") == rows("g_off"))
    assert(rows("g_on").size == 3000 - 2)
    assert(skipped >= Files - 5, s"skipped $skipped")

    val bySource = (t: String) =>
      s"""MERGE INTO $t t USING erasures e ON t.k = e.key WHEN MATCHED THEN UPDATE SET v = 0
         |WHEN NOT MATCHED BY SOURCE AND t.v = 3 THEN UPDATE SET v = 33""".stripMargin
    val (_, skippedBySource) = skippedDuring("g_on")(sql(bySource("g_on")))
    withIndexEnabled(on = false)(sql(bySource("g_off")))
    assert(rows("g_on") == rows("g_off"))
    assert(skippedBySource == 0, s"a clause over unmatched target rows must read every file: $skippedBySource")
  }

  test("MERGE with a literal on the target in ON or in a clause: the files without a key are skipped") {
    create("ml_on", indexed = true); create("ml_off", indexed = false)
    spark.createDataFrame(Seq(("u-18", 1L), ("u-19", 2L), ("u-2000", 3L), ("nope", 4L))).toDF("key", "nv")
      .createOrReplaceTempView("msrc")
    for (stmt <- Seq[String => String](
        t => s"MERGE INTO $t t USING msrc s ON t.k = s.key AND t.k = 'u-18' WHEN MATCHED THEN UPDATE SET v = s.nv",
        t => s"MERGE INTO $t t USING msrc s ON t.k = s.key AND t.k IN ('u-19', 'u-2000') WHEN MATCHED THEN DELETE",
        t => s"MERGE INTO $t t USING msrc s ON t.k = s.key WHEN MATCHED AND t.k = 'u-18' THEN UPDATE SET v = 7")) {
      val (lookups, skipped) = skippedDuring("ml_on")(sql(stmt("ml_on")))
      withIndexEnabled(on = false)(sql(stmt("ml_off")))
      assert(rows("ml_on") == rows("ml_off"), stmt("ml_on"))
      // the keys are in 3 of the 60 files
      assert(lookups >= 1 && skipped >= Files - 4, s"${stmt("ml_on")}: lookups $lookups, skipped $skipped")
    }
    assert(rows("ml_on").size == 3000 - 2)
  }

  test("DELETE and UPDATE with an IN (subquery), where Delta accepts them, equal the unindexed ones") {
    create("d_on", indexed = true); create("d_off", indexed = false)
    spark.createDataFrame(Seq(Tuple1("u-8"), Tuple1("u-2999"))).toDF("key").createOrReplaceTempView("gone")
    def both(stmt: String => String): Unit = {
      val on = scala.util.Try(sql(stmt("d_on")))
      val off = scala.util.Try(withIndexEnabled(on = false)(sql(stmt("d_off"))))
      assert(on.isSuccess == off.isSuccess, s"$on / $off") // OSS Delta may reject subqueries: the same way
      assert(rows("d_on") == rows("d_off"))
    }
    both(t => s"DELETE FROM $t WHERE k IN (SELECT key FROM gone)")
    both(t => s"UPDATE $t SET v = 100 WHERE k IN (SELECT key FROM gone)")
    both(t => s"DELETE FROM $t WHERE EXISTS (SELECT 1 FROM gone WHERE gone.key = $t.k)")
  }

  test("DELETE and UPDATE with literal key conditions look for their rows only in the files holding a key") {
    create("dl_on", indexed = true); create("dl_off", indexed = false)
    // (statement, rows in the table after it); with deletion vectors and column mapping (create)
    for ((stmt, expected) <- Seq[(String => String, Int)](
        (t => s"DELETE FROM $t WHERE k IN ('u-8', 'u-2999', 'absent')", 2998),
        (t => s"UPDATE $t SET v = 100 WHERE k = 'u-17' OR k IS NULL", 2998))) {
      val (lookups, skipped) = skippedDuring("dl_on")(sql(stmt("dl_on")))
      withIndexEnabled(on = false)(sql(stmt("dl_off")))
      assert(rows("dl_on") == rows("dl_off") && rows("dl_on").size == expected, stmt("dl_on"))
      // one or two keys: most of the 60 files are neither read nor rewritten
      assert(lookups >= 1 && skipped >= Files - 6, s"${stmt("dl_on")}: lookups $lookups, skipped $skipped")
    }
    assert(rows("dl_on").count(_.getLong(2) == 100L) == 1)
  }

  // ---------------------------------------------------------------------------------------------
  // Maintenance on write

  private def batch(from: Long, until: Long, files: Int) =
    spark.range(from, until, 1, files).selectExpr("id", "concat('u-', cast(id as string)) as k", "id % 7 as v")

  private def described(table: String): IndexDescription = BloomIndexes.describe(spark, TableRef.Catalog(table), "ix")

  /** `k = key` with the index on and off: equal rows, and the number of files the index kept. */
  private def lookup(table: String, key: String, expected: Int): Long = {
    val o = compare(spark.table(table).where(s"k = '$key'"))
    assert(o.on == o.off && o.on.size == expected, s"$table k = $key: ${o.on} / ${o.off}")
    assert(o.skipping.nonEmpty, s"$table k = $key was not pruned: ${o.plan}")
    o.kept
  }

  private def sortedRows(table: String): Seq[Row] =
    withIndexEnabled(on = false)(spark.table(table).collect().toSeq.sortBy(_.toString))

  test("appends by path and by name, INSERT: every new file is covered when the write returns") {
    sql("CREATE TABLE da (id BIGINT, k STRING, v BIGINT) USING delta")
    batch(0, 2000, 10).write.format("delta").mode("append").saveAsTable("da")
    sql("CREATE BLOOM INDEX ix ON da (k)")
    batch(2000, 3000, 5).write.format("delta").mode("append").saveAsTable("da")
    sql("INSERT INTO da SELECT id, concat('u-', cast(id as string)), 0 FROM range(3000, 3100, 1, 2)")
    val d = described("da")
    assert(d.filesInTable == 17 && d.filesNotCovered == 0 && d.filesCovered == 17, d)
    assert(lookup("da", "u-2500", 1) <= 2)
    assert(lookup("da", "u-3050", 1) <= 2)

    val path = NioFiles.createTempDirectory("delta-path").toString + "/t"
    batch(0, 1000, 8).write.format("delta").save(path)
    BloomIndexes.create(spark, TableRef.Path(path), "ix", Seq(ColumnSpec("k")), Map.empty,
      ifNotExists = false)
    batch(1000, 2000, 4).write.format("delta").mode("append").save(path)
    val byPath = s"delta.`file:$path`"
    val p = described(byPath)
    assert(p.filesInTable == 12 && p.filesNotCovered == 0, p)
    assert(lookup(byPath, "u-1500", 1) <= 2)
  }

  test(
    "MERGE, UPDATE, DELETE, OPTIMIZE and RESTORE rewrite files: the rewritten ones are covered, the removed dropped") {
    for (t <- Seq("dm_on", "dm_off")) {
      sql(s"CREATE TABLE $t (id BIGINT, k STRING, v BIGINT) USING delta")
      batch(0, 1200, 6).write.format("delta").mode("append").saveAsTable(t)
    }
    sql("CREATE BLOOM INDEX ix ON dm_on (k)")
    spark.range(0, 20).selectExpr("concat('u-', cast(id * 60 + if(id >= 10, 5000, 0) as string)) as key",
      "id as nv").createOrReplaceTempView("src")
    def both(stmt: String => String): Unit = {
      sql(stmt("dm_on"))
      withIndexEnabled(on = false)(sql(stmt("dm_off")))
      assert(sortedRows("dm_on") == sortedRows("dm_off"), stmt("dm_on"))
      val d = described("dm_on")
      assert(d.filesNotCovered == 0 && d.filesCovered == d.filesInTable, s"${stmt("dm_on")}: $d")
    }
    both(t => s"""MERGE INTO $t t USING src s ON t.k = s.key
                 |WHEN MATCHED THEN UPDATE SET v = s.nv
                 |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (-1, s.key, s.nv)""".stripMargin)
    assert(lookup("dm_on", "u-5600", 1) <= 2) // inserted by the MERGE
    both(t => s"UPDATE $t SET k = 'changed-' || k WHERE id % 1000 = 7")
    assert(lookup("dm_on", "changed-u-1007", 1) <= 2)
    assert(lookup("dm_on", "u-1007", 0) <= 2)
    both(t => s"DELETE FROM $t WHERE id % 500 = 1")
    assert(lookup("dm_on", "u-501", 0) <= 2)
    both(t => s"OPTIMIZE $t")
    val d = described("dm_on")
    assert(d.filesDeleted == 0, d) // the files OPTIMIZE removed are gone from the index too
    assert(lookup("dm_on", "u-1199", 1) <= 2)
    // RESTORE brings back the files of the first append, which the index had dropped: covered when it returns
    both(t => s"RESTORE TABLE $t TO VERSION AS OF 1")
    assert(lookup("dm_on", "u-1007", 1) <= 2)
    assert(lookup("dm_on", "changed-u-1007", 0) <= 2)
  }

  test("after a commit the index takes the files it added and removed from the log, without listing the table") {
    sql(s"""CREATE TABLE dl (id BIGINT, k STRING, v BIGINT) USING delta TBLPROPERTIES (
           |'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true')""".stripMargin)
    batch(0, 1200, 6).write.format("delta").mode("append").saveAsTable("dl")
    sql("CREATE BLOOM INDEX ix ON dl (k)")
    val ref = TableRef.Catalog("dl")
    /** The index brought up to date from the log by the maintenance of a write; listing the table fails it. */
    def fromLog(): IndexDescription = {
      val t = BloomIndexes.resolve(spark, ref, refresh = true)
      IndexManager.update(spark, t.copy(listing = () => fail("the table was listed whole")), "ix", full = false,
        fromLog = true)
      val d = described("dl")
      assert(d.snapshotCovered == d.snapshotNow && d.filesNotCovered == 0 && d.filesDeleted == 0, d)
      assert(d.filesCovered == d.filesInTable, d)
      d
    }
    withoutMaintenance {
      batch(1200, 1500, 3).write.format("delta").mode("append").saveAsTable("dl") // 3 files added
      sql("INSERT INTO dl SELECT id, concat('u-', cast(id as string)), 0 FROM range(1500, 1600, 1, 2)")
    }
    assert(fromLog().filesInTable == 11)
    assert(lookup("dl", "u-1550", 1) <= 2)
    withoutMaintenance(sql("DELETE FROM dl WHERE id % 100 = 3")) // deletion vectors: each file removed and re-added
    fromLog()
    assert(lookup("dl", "u-1203", 0) <= 2)
    withoutMaintenance(sql("UPDATE dl SET k = 'upd-' || k WHERE id = 1404")) // a file rewritten
    fromLog()
    assert(lookup("dl", "upd-u-1404", 1) <= 2)
    withoutMaintenance(sql("OPTIMIZE dl")) // every file replaced
    assert(fromLog().filesInTable == 1)
    assert(lookup("dl", "u-1199", 1) <= 1)
    // A commit that changes the table's metadata (a column added) is not read from the log: the table is listed.
    withoutMaintenance(sql("ALTER TABLE dl ADD COLUMNS (w INT)"))
    val t = BloomIndexes.resolve(spark, ref, refresh = true)
    assert(t.changesSince(described("dl").snapshotCovered.get).isEmpty)
    assert(t.changesSince("Delta version 0").isEmpty) // from before the metadata change: listed whole as well
    MaintainOnWrite.afterTableWrite(spark, Seq(TableFormat.Written(t.root, ref)))
    val d = described("dl")
    assert(d.snapshotCovered == d.snapshotNow && d.filesNotCovered == 0, d)
  }

  test("REPLACE TABLE: lookups answer as without sparkbloom, and the index catches up after the first lookup") {
    assume(TestShims.deltaReplaceTableAsSelect,
      "Delta 3.3 on Spark 3.5.6+ cannot CREATE OR REPLACE TABLE AS SELECT (delta-io/delta#4671; TestShims)")
    sql("CREATE TABLE dr (id BIGINT, k STRING, v BIGINT) USING delta")
    batch(0, 1000, 5).write.format("delta").mode("append").saveAsTable("dr")
    sql("CREATE BLOOM INDEX ix ON dr (k)")
    // The same schema, other rows: the files of the table before are all removed, in a commit with new metadata.
    sql("CREATE OR REPLACE TABLE dr USING delta AS " +
      "SELECT id, concat('u-', cast(id as string)) AS k, id % 7 AS v FROM range(5000, 5600, 1, 4)")
    withSQLConf("spark.sparkbloom.maintainOnWrite.refreshOnRead" -> "true") {
      val o = compare(spark.table("dr").where("k IN ('u-5100', 'u-100')"))
      assert(o.on == o.off && o.on.size == 1, s"${o.on} / ${o.off}")
      assert(BackgroundMaintenance.await(spark, 60000), "the queued refresh ran")
    }
    val d = described("dr")
    assert(d.filesInTable == 4 && d.filesNotCovered == 0 && d.filesCovered == 4 && d.filesDeleted == 0, d)
    assert(lookup("dr", "u-5300", 1) <= 2)
    assert(lookup("dr", "u-300", 0) <= 1)
    // Replaced with another type for the indexed column: never a wrong answer, the index no longer used for it.
    sql("CREATE OR REPLACE TABLE dr USING delta AS SELECT id, id AS k, id % 7 AS v FROM range(0, 600, 1, 4)")
    withSQLConf("spark.sparkbloom.maintainOnWrite.refreshOnRead" -> "true") {
      val typed = compare(spark.table("dr").where("k = 300"))
      assert(typed.on == typed.off && typed.on.size == 1, s"${typed.on} / ${typed.off}")
      assert(BackgroundMaintenance.await(spark, 60000), "the queued refresh ran")
    }
    val again = compare(spark.table("dr").where("k = 301"))
    assert(again.on == again.off && again.on.size == 1, s"${again.on} / ${again.off}")
  }

  test("an index created with maintain_on_write = false is left to REFRESH") {
    sql("CREATE TABLE dx (id BIGINT, k STRING, v BIGINT) USING delta")
    batch(0, 1000, 4).write.format("delta").mode("append").saveAsTable("dx")
    sql("CREATE BLOOM INDEX ix ON dx (k) OPTIONS (maintain_on_write = false)")
    batch(1000, 2000, 3).write.format("delta").mode("append").saveAsTable("dx")
    val d = described("dx")
    assert(d.filesNotCovered == 3 && d.filesCovered == 4, d)
    val o = compare(spark.table("dx").where("k = 'u-1500'"))
    assert(o.on == o.off && o.on.size == 1)
  }

  test("Delta's streaming sink: each micro-batch's files are indexed after it commits, before the next batch") {
    implicit val ctx: org.apache.spark.sql.SQLContext = spark.sqlContext
    import spark.implicits._
    val path = NioFiles.createTempDirectory("delta-stream").toString + "/t"
    batch(0, 500, 2).write.format("delta").save(path)
    BloomIndexes.create(spark, TableRef.Path(path), "ix", Seq(ColumnSpec("k")), Map.empty,
      ifNotExists = false)
    val input = MemoryStream[Long]
    val query = input.toDF().selectExpr("value as id", "concat('u-', cast(value as string)) as k", "value % 7 as v")
      .writeStream.format("delta").option("checkpointLocation", path + "_checkpoint").start(path)
    val byPath = s"delta.`file:$path`"
    // each batch waits for the refresh of the one before (known once the query's progress named its sink)
    val uncovered = try {
      for (batch <- 1 to 4) yield {
        input.addData((batch * 1000L) until (batch * 1000L + 100))
        query.processAllAvailable()
        described(byPath).filesNotCovered
      }
    } finally query.stop()
    assert(uncovered.drop(2).forall(_ <= 1), uncovered)
    // the refresh follows the batch's progress event: wait for it (a failed wait fails below, never passes)
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (described(byPath).filesNotCovered > 0 && System.nanoTime() < deadline) {
      BackgroundMaintenance.await(spark, 5000)
      Thread.sleep(200)
    }
    val d = described(byPath)
    assert(d.filesNotCovered == 0 && d.filesInTable == d.filesCovered && d.filesInTable >= 6, d)
    assert(lookup(byPath, "u-3050", 1) <= 2)
    assert(lookup(byPath, "u-3150", 0) <= 2)
  }
}
