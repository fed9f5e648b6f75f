package sparkbloom.formats.iceberg

import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.formats.LakehouseSpark

/**
 * Key-set pruning of Iceberg scans: a join, an `IN (subquery)` and a left semi join read only the data files whose
 * filters may hold one of the keys the other side gives at run time; the preserved side of an outer join, and the
 * reads of MERGE, are never pruned. Every query is compared with sparkbloom off.
 */
class IcebergKeySetSuite extends AnyFunSuite with LakehouseSpark {
  override protected def formatExtension: String = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
  override protected def formatConf(warehouse: String): Map[String, String] = Map(
    "spark.sql.catalog.ice" -> "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.ice.type" -> "hadoop",
    "spark.sql.catalog.ice.warehouse" -> (warehouse + "/ice"),
    "spark.sparkbloom.runtimePruning.minTableSize" -> "0")

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

  private def keys(values: String*) = spark.createDataFrame(values.map(Tuple1(_))).toDF("key")

  test("a join with an Iceberg table reads only the files holding the keys") {
    val o = compare(spark.table(table).join(keys("u-17", "u-2500", "absent"), col("k") === col("key")))
    assert(o.on == o.off && o.on.size == 2)
    assert(o.metrics.get("keysProbed").contains(3L), o.metrics)
    assert(o.skipping.exists(s => s.filesTotal == Files && s.filesKept <= 4), o.skipping)
    assert(o.plan.toString.contains("run-time keys"), o.plan.toString)
  }

  test("IN (subquery) and a left semi join are pruned; duplicate and NULL keys change nothing") {
    keys("u-5", "u-5", "u-2999", null).createOrReplaceTempView("wanted")
    for (q <- Seq(s"SELECT * FROM $table WHERE k IN (SELECT key FROM wanted)",
        s"SELECT * FROM $table t LEFT SEMI JOIN wanted w ON t.k = w.key")) {
      val o = compare(sql(q))
      assert(o.on == o.off && o.on.size == 2, q)
      assert(o.skipping.exists(s => s.filesTotal == Files && s.filesKept <= 4), s"$q: ${o.skipping}")
    }
  }

  test("the preserved side of an outer join and an anti join are read whole") {
    val left = compare(spark.table(table).join(keys("u-17"), col("k") === col("key"), "left_outer"))
    assert(left.on == left.off && left.on.size == 3000)
    assert(left.skipping.forall(s => s.filesKept == s.filesTotal), left.skipping)
    val anti = compare(spark.table(table).join(keys("u-17"), col("k") === col("key"), "left_anti"))
    assert(anti.on == anti.off && anti.on.size == 2999)
    assert(anti.skipping.forall(s => s.filesKept == s.filesTotal), anti.skipping)
  }

  test("a MERGE into the indexed table equals the same MERGE with sparkbloom off") {
    for (t <- Seq("ice.db.km_on", "ice.db.km_off")) {
      sql(s"CREATE TABLE $t (id BIGINT, k STRING, v BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '2')")
      spark.range(0, 1000, 1, 10).selectExpr("id", "concat('u-', cast(id as string)) as k", "0 as v").writeTo(t)
        .append()
    }
    sql("CREATE BLOOM INDEX ix ON ice.db.km_on (k)")
    keys("u-3", "u-999", "new").createOrReplaceTempView("upd")
    val merge = (t: String) =>
      s"""MERGE INTO $t t USING upd s ON t.k = s.key WHEN MATCHED THEN UPDATE SET v = 1
         |WHEN NOT MATCHED THEN INSERT (id, k, v) VALUES (-1, s.key, 2)""".stripMargin
    sql(merge("ice.db.km_on"))
    withIndexEnabled(on = false)(sql(merge("ice.db.km_off")))
    def rows(t: String) = withIndexEnabled(on = false)(spark.table(t).collect().toSeq.sortBy(_.toString))
    assert(rows("ice.db.km_on") == rows("ice.db.km_off"))
    assert(rows("ice.db.km_on").count(_.getLong(2) == 1L) == 2)
  }
}
