package sparkbloom.formats.delta

import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.api.{BloomIndexes, DataFrameTable}
import sparkbloom.index.{BloomIndexException, ColumnSpec, TableRef}

/**
 * Bloom indexes on real Delta Lake tables (delta-spark from Maven Central, DeltaCatalog as the session
 * catalog): a 200-file table with column mapping and deletion vectors, looked up after each step of its
 * life, every answer compared with the same query with sparkbloom off.
 */
class DeltaSuite extends AnyFunSuite with DeltaSpark {

  /** 200 files of 100 rows; keys `u-<n>` spread so that every file's min/max spans the key range. */
  private lazy val table: String = {
    sql("""CREATE TABLE dl (id BIGINT, k STRING, v BIGINT) USING delta TBLPROPERTIES (
          |'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true')""".stripMargin)
    spark.range(0, 20000, 1, 200).selectExpr("id", "concat('u-', cast((id * 7919) % 20000 as string)) as k",
      "id % 7 as v")
      .write.format("delta").mode("append").saveAsTable("dl")
    sql("CREATE BLOOM INDEX dix ON dl (k)")
    "dl"
  }

  private def lookup(where: String, from: String = table): Outcome = {
    val o = compare(sql(s"SELECT id, k, v FROM $from WHERE $where"))
    assert(o.on == o.off, s"$where: rows differ with the index")
    o
  }

  test("a point lookup on a 200-file Delta table reads only the file holding the key; metrics, EXPLAIN, skipping") {
    val d = BloomIndexes.describe(spark, TableRef.Catalog(table), "dix")
    assert(d.filesCovered == 200 && d.filesNotCovered == 0 && d.table == "dl", d)
    assert(d.snapshotCovered == Some("Delta version 1") && d.snapshotNow == d.snapshotCovered, d)
    val o = lookup("k = 'u-1234'")
    assert(o.on.size == 1)
    assert(o.skipping.size == 1 && o.skipping.head.filesTotal == 200, o.skipping)
    assert(o.kept <= 3 && o.skipped >= 197, o.skipping) // the key's file + false positives within the budget
    assert(o.metrics("filesSkipped") == o.skipped, o.metrics)
    val explained = o.plan.toString
    assert(explained.contains("BloomIndexSkipping [dix]") && explained.contains("BloomDeltaFileIndex"), explained)
    // Delta's own min/max skipping cannot drop these files: every file spans the keys.
    val deltaOnly = withIndexEnabled(on = false) {
      val df = sql("SELECT * FROM dl WHERE k = 'u-1234'"); df.collect()
      collect(df.queryExecution.executedPlan) { case s: org.apache.spark.sql.execution.FileSourceScanExec =>
        s.metrics("numFiles").value
      }.sum
    }
    assert(deltaOnly >= 190, s"Delta alone read $deltaOnly files")
    val in = lookup("k IN ('u-1', 'u-2', 'u-3') OR k <=> 'absent'")
    assert(in.on.size == 3 && in.kept <= 6, in.skipping)
    assert(lookup("k = 'absent'").kept <= 2)
    // the DataFrame API names the same table
    val target = DataFrameTable.target(spark.table("dl").where("v > 0").select("k"), Seq("k"))
    assert(target.table == TableRef.Catalog("spark_catalog.default.dl") && target.columns == Seq("k"), target)
    assert(BloomIndexes.describe(spark, target.table, "dix").filesCovered == 200)
  }

  test("deleted rows never come back: DELETE writes deletion vectors into indexed files") {
    table
    val before = lookup("k = 'u-4321'")
    assert(before.on.size == 1)
    sql("DELETE FROM dl WHERE k = 'u-4321' OR k = 'u-4322'")
    val dvs = sql("DESCRIBE HISTORY dl").where("operation = 'DELETE'").select("operationMetrics").collect()
    assert(dvs.nonEmpty && dvs.head.getMap[String, String](0).get("numDeletionVectorsAdded").exists(_.toInt > 0),
      s"DELETE wrote no deletion vector: ${dvs.toSeq}")
    val after = lookup("k = 'u-4321'")
    assert(after.on.isEmpty && after.kept >= 1, after.skipping) // the file is still read; its vector hides the row
    assert(lookup("k IN ('u-4321', 'u-4322', 'u-4323')").on.size == 1)
  }

  test("writes not maintained: append, REFRESH INCREMENTAL, column rename, time travel, compaction, overwrite") {
    withoutMaintenance {
      table
      // append: new files are not covered and are read
      spark.range(20000, 20500, 1, 5).selectExpr("id", "concat('n-', cast(id as string)) as k", "id % 7 as v")
        .write.format("delta").mode("append").saveAsTable("dl")
      val appended = lookup("k = 'n-20007'")
      // (Delta's min/max statistics already drop the other new files: the keys were appended in order)
      assert(appended.on.size == 1 && appended.skipping.head.filesNotCovered == 1, appended.skipping)
      val stale = BloomIndexes.describe(spark, TableRef.Catalog("dl"), "dix")
      assert(stale.filesNotCovered == 5 && stale.snapshotCovered != stale.snapshotNow, stale)
      sql("REFRESH BLOOM INDEX dix ON dl INCREMENTAL")
      val d = BloomIndexes.describe(spark, TableRef.Catalog("dl"), "dix")
      assert(d.filesNotCovered == 0 && d.filesCovered == 205 && d.snapshotCovered == d.snapshotNow, d)
      val shown = sql("DESCRIBE BLOOM INDEX dix ON dl").collect().map(r => r.getString(0) -> r.getString(1)).toMap
      assert(shown.get("Table Version Covered") == d.snapshotCovered &&
          d.snapshotCovered.exists(_.startsWith("Delta version ")), shown)
      val refreshed = lookup("k = 'n-20007'")
      assert(refreshed.on.size == 1 && refreshed.kept <= 3, refreshed.skipping)

      // rename: the files keep their physical column name, so the index still answers under the new name
      sql("ALTER TABLE dl RENAME COLUMN k TO user_key")
      val renamed = compare(sql("SELECT id, user_key, v FROM dl WHERE user_key = 'u-777'"))
      assert(renamed.on == renamed.off && renamed.on.size == 1)
      assert(renamed.kept <= 3 && renamed.skipped >= 190, renamed.skipping)
      sql("REFRESH BLOOM INDEX dix ON dl INCREMENTAL") // still resolves the renamed column

      // time travel to the first version: its schema still says k, and its rows (no deletes yet) are read
      val v1 = sql("DESCRIBE HISTORY dl").where("operation = 'WRITE' OR operation = 'CREATE TABLE AS SELECT'")
        .agg(min("version")).head().getLong(0)
      val old = compare(sql(s"SELECT id, k, v FROM dl VERSION AS OF $v1 WHERE k = 'u-4321'"))
      assert(old.on == old.off && old.on.size == 1, old)

      // compaction rewrites every file: none is covered until a refresh, and nothing is lost meanwhile
      sql("OPTIMIZE dl")
      val compacted = compare(sql("SELECT id, user_key, v FROM dl WHERE user_key = 'u-999'"))
      assert(compacted.on == compacted.off && compacted.on.size == 1)
      assert(compacted.skipping.forall(s => s.filesNotCovered == s.filesTotal), compacted.skipping)
      sql("REFRESH BLOOM INDEX dix ON dl")
      val afterRefresh = compare(sql("SELECT id, user_key, v FROM dl WHERE user_key = 'u-999'"))
      assert(afterRefresh.on == afterRefresh.off && afterRefresh.skipping.head.filesNotCovered == 0,
        afterRefresh.skipping)

      // overwrite: new files only; the old ones the index covers are gone from the snapshot
      // (INSERT OVERWRITE: Delta 3.3 on Spark 3.5 refuses DataFrameWriter's saveAsTable overwrite of this table by
      // itself)
      spark.range(0, 300, 1, 3).selectExpr("id", "concat('o-', cast(id as string)) as user_key", "id % 7 as v")
        .createOrReplaceTempView("replacement")
      sql("INSERT OVERWRITE dl SELECT id, user_key, v FROM replacement")
      val over = compare(sql("SELECT id, user_key, v FROM dl WHERE user_key = 'o-42' OR user_key = 'u-999'"))
      assert(over.on == over.off && over.on.size == 1, over)
    }
  }

  test("a Delta path table, harvested native filters, and a lookup through spark.read.format(\"delta\")") {
    val path = warehouse + "/harvest"
    withSQLConf("parquet.bloom.filter.enabled#k" -> "true", "parquet.enable.dictionary" -> "false") {
      spark.range(0, 6000, 1, 30).selectExpr("id", "concat('h-', cast(id * 31 % 6000 as string)) as k")
        .write.format("delta").save(path)
    }
    val df = spark.read.format("delta").load(path)
    val target = DataFrameTable.target(df, Seq("k"))
    assert(target.table.display.startsWith("delta.`"), target)
    BloomIndexes.create(spark, target.table, "hx", Seq(ColumnSpec("k")), Map.empty, ifNotExists = false)
    val d = BloomIndexes.describe(spark, target.table, "hx")
    assert(d.filtersHarvested == d.rowGroupsCovered && d.filtersHarvested >= 30 && d.filtersScanned == 0, d)
    val o = compare(spark.read.format("delta").load(path).where(col("k") === "h-31"))
    assert(o.on == o.off && o.on.size == 1 && o.kept <= 2 && o.skipping.head.filesTotal == 30, o.skipping)
    // the same table named as a path in SQL
    val viaSql = compare(sql(s"SELECT * FROM delta.`$path` WHERE k = 'h-62'"))
    assert(viaSql.on == viaSql.off && viaSql.on.size == 1 && viaSql.kept <= 2, viaSql.skipping)
  }

  test("a partitioned Delta table whose partition values need escaping in file paths") {
    val path = warehouse + "/parted"
    spark.range(0, 3000, 1, 10).selectExpr("id", "concat('p-', cast(id * 13 % 3000 as string)) as k",
      "concat('a b/', cast(id % 3 as string)) as part")
      .write.format("delta").partitionBy("part").save(path)
    val ref = TableRef.Catalog(s"delta.`$path`")
    BloomIndexes.create(spark, ref, "px", Seq(ColumnSpec("k")), Map.empty, ifNotExists = false)
    val d = BloomIndexes.describe(spark, ref, "px")
    assert(d.filesNotCovered == 0 && d.filesCovered == d.filesInTable && d.filesCovered >= 20, d)
    val o = compare(spark.read.format("delta").load(path).where(col("k") === "p-13"))
    assert(o.on == o.off && o.on.size == 1 && o.kept <= 2 && o.skipping.head.filesNotCovered == 0, o.skipping)
    val both = compare(spark.read.format("delta").load(path).where(col("k") === "p-26" && col("part") === "a b/2"))
    assert(both.on == both.off && both.on.size == 1, both)
    val err = intercept[BloomIndexException](
      BloomIndexes.create(spark, ref, "bad", Seq(ColumnSpec("part")), Map.empty, ifNotExists = false))
    assert(err.getMessage.contains("partition column"), err.getMessage)
  }

  test("differential fuzz: random predicates over every type on a Delta table with deletion vectors") {
    val path = warehouse + "/fuzz"
    val (n, pruned, bothFailed) = fuzz(df => {
        df.write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
        sql(s"DELETE FROM delta.`$path` WHERE id % 10 = 3") // every file gets a deletion vector
      }, () => spark.read.format("delta").load(path), TableRef.Catalog(s"delta.`$path`"), 20251124L)
    info(s"$n random predicates, same rows with and without the index; $pruned pruned files; " +
      s"$bothFailed failed both with and without the index")
    assert(pruned > n / 10, s"only $pruned of $n queries pruned a file")
  }
}
