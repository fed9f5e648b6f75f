package sparkbloom.formats.iceberg

import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.api.BloomIndexes
import sparkbloom.formats.LakehouseSpark
import sparkbloom.index.{IndexDescription, TableRef}

/**
 * Maintenance on write for Iceberg tables: appends, overwrites and the rewrites of MERGE, UPDATE and DELETE, in
 * copy-on-write and merge-on-read tables, leave no data file uncovered when they return; every lookup after them
 * answers as sparkbloom off does, on a twin table written the same way without an index.
 */
class IcebergMaintenanceSuite extends AnyFunSuite with LakehouseSpark {
  override protected def formatExtension: String = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
  override protected def formatConf(warehouse: String): Map[String, String] = Map(
    "spark.sql.catalog.ice" -> "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.ice.type" -> "hadoop",
    "spark.sql.catalog.ice.warehouse" -> (warehouse + "/ice"))

  private def modes(mode: String): String =
    s"'format-version' = '2', 'write.distribution-mode' = 'none', 'write.delete.mode' = '$mode', " +
      s"'write.update.mode' = '$mode', 'write.merge.mode' = '$mode'"

  private def described(table: String): IndexDescription = BloomIndexes.describe(spark, TableRef.Catalog(table), "ix")

  private def sorted(table: String): Seq[Row] =
    withIndexEnabled(on = false)(spark.table(table).collect().toSeq.sortBy(_.toString))

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
      spark.range(0, 3000, 1, 12).selectExpr("id", "concat('u-', cast(id as string)) as k", "id % 7 as v")
        .writeTo(t).append()
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
}
