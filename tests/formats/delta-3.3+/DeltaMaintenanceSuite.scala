package sparkbloom.formats.delta

import java.nio.file.Files

import org.apache.spark.sql.Row
import org.apache.spark.sql.execution.streaming.MemoryStream
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.api.BloomIndexes
import sparkbloom.formats.LakehouseSpark
import sparkbloom.index.{ColumnSpec, IndexDescription, TableRef}
import sparkbloom.sql.StreamingMaintenance

/**
 * Maintenance on write for Delta tables: Delta's own writes (appends by path and by catalog name, INSERT, MERGE,
 * UPDATE, DELETE, OPTIMIZE, and its streaming sink) leave no file of the table uncovered, and every lookup after
 * them answers as sparkbloom off does.
 */
class DeltaMaintenanceSuite extends AnyFunSuite with LakehouseSpark {
  override protected def formatExtension: String = "io.delta.sql.DeltaSparkSessionExtension"
  override protected def formatConf(warehouse: String): Map[String, String] =
    Map("spark.sql.catalog.spark_catalog" -> "org.apache.spark.sql.delta.catalog.DeltaCatalog",
      "spark.databricks.delta.snapshotPartitions" -> "2")

  private def rows(from: Long, until: Long, files: Int) =
    spark.range(from, until, 1, files).selectExpr("id", "concat('u-', cast(id as string)) as k", "id % 7 as v")

  private def described(table: String): IndexDescription = BloomIndexes.describe(spark, TableRef.Catalog(table), "ix")

  /** `k = key` with the index on and off: equal rows, and the number of files the index kept. */
  private def lookup(table: String, key: String, expected: Int): Long = {
    val o = compare(spark.table(table).where(s"k = '$key'"))
    assert(o.on == o.off && o.on.size == expected, s"$table k = $key: ${o.on} / ${o.off}")
    assert(o.skipping.nonEmpty, s"$table k = $key was not pruned: ${o.plan}")
    o.kept
  }

  private def sorted(table: String): Seq[Row] =
    withIndexEnabled(on = false)(spark.table(table).collect().toSeq.sortBy(_.toString))

  test("appends by path and by name, INSERT: every new file is covered when the write returns") {
    sql("CREATE TABLE da (id BIGINT, k STRING, v BIGINT) USING delta")
    rows(0, 2000, 10).write.format("delta").mode("append").saveAsTable("da")
    sql("CREATE BLOOM INDEX ix ON da (k)")
    rows(2000, 3000, 5).write.format("delta").mode("append").saveAsTable("da")
    sql("INSERT INTO da SELECT id, concat('u-', cast(id as string)), 0 FROM range(3000, 3100, 1, 2)")
    val d = described("da")
    assert(d.filesInTable == 17 && d.filesNotCovered == 0 && d.filesCovered == 17, d)
    assert(lookup("da", "u-2500", 1) <= 2)
    assert(lookup("da", "u-3050", 1) <= 2)

    val path = Files.createTempDirectory("delta-path").toString + "/t"
    rows(0, 1000, 8).write.format("delta").save(path)
    BloomIndexes.create(spark, TableRef.Path(path), "ix", Seq(ColumnSpec("k")), Map.empty,
      ifNotExists = false)
    rows(1000, 2000, 4).write.format("delta").mode("append").save(path)
    val byPath = s"delta.`file:$path`"
    val p = described(byPath)
    assert(p.filesInTable == 12 && p.filesNotCovered == 0, p)
    assert(lookup(byPath, "u-1500", 1) <= 2)
  }

  test("MERGE, UPDATE, DELETE and OPTIMIZE rewrite files: the rewritten ones are covered, the removed dropped") {
    for (t <- Seq("dm_on", "dm_off")) {
      sql(s"CREATE TABLE $t (id BIGINT, k STRING, v BIGINT) USING delta")
      rows(0, 3000, 12).write.format("delta").mode("append").saveAsTable(t)
    }
    sql("CREATE BLOOM INDEX ix ON dm_on (k)")
    spark.range(0, 20).selectExpr("concat('u-', cast(id * 150 + if(id >= 10, 5000, 0) as string)) as key",
      "id as nv").createOrReplaceTempView("src")
    def both(stmt: String => String): Unit = {
      sql(stmt("dm_on"))
      withIndexEnabled(on = false)(sql(stmt("dm_off")))
      assert(sorted("dm_on") == sorted("dm_off"), stmt("dm_on"))
      val d = described("dm_on")
      assert(d.filesNotCovered == 0 && d.filesCovered == d.filesInTable, s"${stmt("dm_on")}: $d")
    }
    both(t => s"""MERGE INTO $t t USING src s ON t.k = s.key
                 |WHEN MATCHED THEN UPDATE SET v = s.nv
                 |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (-1, s.key, s.nv)""".stripMargin)
    assert(lookup("dm_on", "u-6500", 1) <= 2) // inserted by the MERGE
    both(t => s"UPDATE $t SET k = 'changed-' || k WHERE id % 1000 = 7")
    assert(lookup("dm_on", "changed-u-1007", 1) <= 2)
    assert(lookup("dm_on", "u-1007", 0) <= 2)
    both(t => s"DELETE FROM $t WHERE id % 500 = 1")
    assert(lookup("dm_on", "u-501", 0) <= 2)
    both(t => s"OPTIMIZE $t")
    val d = described("dm_on")
    assert(d.filesDeleted == 0, d) // the files OPTIMIZE removed are gone from the index too
    assert(lookup("dm_on", "u-2999", 1) <= 2)
  }

  test("an index created with maintain_on_write = false is left to REFRESH") {
    sql("CREATE TABLE dx (id BIGINT, k STRING, v BIGINT) USING delta")
    rows(0, 1000, 4).write.format("delta").mode("append").saveAsTable("dx")
    sql("CREATE BLOOM INDEX ix ON dx (k) OPTIONS (maintain_on_write = false)")
    rows(1000, 2000, 3).write.format("delta").mode("append").saveAsTable("dx")
    val d = described("dx")
    assert(d.filesNotCovered == 3 && d.filesCovered == 4, d)
    val o = compare(spark.table("dx").where("k = 'u-1500'"))
    assert(o.on == o.off && o.on.size == 1)
  }

  test("Delta's streaming sink: each micro-batch's files are indexed after it commits") {
    implicit val ctx: org.apache.spark.sql.SQLContext = spark.sqlContext
    import spark.implicits._
    val path = Files.createTempDirectory("delta-stream").toString + "/t"
    rows(0, 500, 2).write.format("delta").save(path)
    BloomIndexes.create(spark, TableRef.Path(path), "ix", Seq(ColumnSpec("k")), Map.empty,
      ifNotExists = false)
    val input = MemoryStream[Long]
    val query = input.toDF().selectExpr("value as id", "concat('u-', cast(value as string)) as k", "value % 7 as v")
      .writeStream.format("delta").option("checkpointLocation", path + "_checkpoint").start(path)
    try {
      for (batch <- 1 to 4) {
        input.addData((batch * 1000L) until (batch * 1000L + 100))
        query.processAllAvailable()
      }
    } finally query.stop()
    val byPath = s"delta.`file:$path`"
    // the refresh follows the batch's progress event: wait for it (a failed wait fails below, never passes)
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (described(byPath).filesNotCovered > 0 && System.nanoTime() < deadline) {
      StreamingMaintenance.await(spark, 5000)
      Thread.sleep(200)
    }
    val d = described(byPath)
    assert(d.filesNotCovered == 0 && d.filesInTable == d.filesCovered && d.filesInTable >= 6, d)
    assert(lookup(byPath, "u-3050", 1) <= 2)
    assert(lookup(byPath, "u-3150", 0) <= 2)
  }
}
