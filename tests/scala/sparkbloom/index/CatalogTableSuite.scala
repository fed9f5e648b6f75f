package sparkbloom.index

import org.apache.spark.sql.functions._

import sparkbloom.api.BloomIndexes
import sparkbloom.testing.SparkSessionSuite
import sparkbloom.testing.TestShims.assumeCollations

class CatalogTableSuite extends SparkSessionSuite {

  test("a partitioned catalog table USING parquet skips files through SQL, and EXPLAIN shows the bloom index") {
    spark.range(0, 8000, 1, 8).select(col("id"), (col("id") % 4).as("part"),
      sha2(col("id").cast("string"), 256).as("h"))
      .write.partitionBy("part").format("parquet").saveAsTable("events")
    spark.sql("CREATE BLOOM INDEX ix ON events (id, h)").collect()
    val o = compare(spark.sql("SELECT id, part FROM events WHERE id = 4242"))
    assert(o.on == o.off && o.on.size == 1)
    assert(o.filesRead == 1, o)
    val withPartition = compare(spark.sql("SELECT id FROM events WHERE part = 2 AND id IN (4242, 4246, 6)"))
    assert(withPartition.on == withPartition.off && withPartition.on.size == 3) // 4242, 4246 and 6 are all in part 2
    val explain = spark.sql("EXPLAIN SELECT * FROM events WHERE id = 4242").collect().map(_.getString(0)).mkString
    assert(explain.contains("BloomSkippingFileIndex"), explain)
    val e = intercept[org.apache.spark.sql.AnalysisException](spark.sql("CREATE BLOOM INDEX ix2 ON events (part)"))
    assert(e.getMessage.contains("partition column"))
  }

  test("the rule leaves queries alone when disabled, and unsupported predicates read everything") {
    spark.range(0, 100, 1, 4).write.format("parquet").saveAsTable("small")
    spark.sql("CREATE BLOOM INDEX ix ON small (id)").collect()
    val range = compare(spark.sql("SELECT * FROM small WHERE id > 50"))
    assert(range.on == range.off && range.filesRead == 4)
    val cast = compare(spark.sql("SELECT * FROM small WHERE cast(id as string) = '7'"))
    assert(cast.on == cast.off && cast.on.size == 1 && cast.filesRead == 4)
    withIndexEnabled(on = false) {
      val plan = spark.sql("SELECT * FROM small WHERE id = 7").queryExecution.optimizedPlan.toString
      assert(!plan.contains("BloomSkippingFileIndex"))
    }
  }

  test("bad DDL is rejected with a clear error before anything is written") {
    spark.range(0, 10).write.format("parquet").saveAsTable("ddl")
    val errors = Seq(
      "CREATE BLOOM INDEX x ON missing_table (id)" -> "not found",
      "CREATE BLOOM INDEX x ON ddl (nope)" -> "does not exist",
      "CREATE BLOOM INDEX x ON ddl (id) OPTIONS (fpp = 0)" -> "fpp",
      "DROP BLOOM INDEX x ON ddl" -> "does not exist",
      "DESCRIBE BLOOM INDEX x ON ddl" -> "does not exist")
    for ((sql, msg) <- errors) {
      val e = intercept[Exception](spark.sql(sql).collect())
      assert(e.getMessage.toLowerCase.contains(msg), s"$sql: ${e.getMessage}")
    }
    spark.sql("CREATE BLOOM INDEX x ON ddl (id)").collect()
    val dup = intercept[org.apache.spark.sql.AnalysisException](spark.sql("CREATE BLOOM INDEX x ON ddl (id)"))
    assert(dup.getMessage.contains("already exists"))
    spark.sql("CREATE BLOOM INDEX IF NOT EXISTS x ON ddl (id)").collect()
    assert(spark.sql("SHOW BLOOM INDEXES ON ddl").count() == 1)
  }

  test("Databricks' BLOOMFILTER INDEX statements create an index and drop single columns in a new version") {
    spark.range(0, 400, 1, 4).selectExpr("id", "concat('k', id) as s").write.format("parquet").saveAsTable("dbx")
    spark.sql("CREATE BLOOMFILTER INDEX ON TABLE dbx FOR COLUMNS (id OPTIONS (fpp = 0.1, numItems = 100), s)").collect()
    val o = compare(spark.sql("SELECT * FROM dbx WHERE s = 'k17'"))
    assert(o.on == o.off && o.on.size == 1 && o.filesRead == 1)
    spark.sql("DROP BLOOMFILTER INDEX ON TABLE dbx FOR COLUMNS (s)").collect()
    val d = BloomIndexes.describe(spark, TableRef.Catalog("dbx"), "bloomfilter")
    assert(d.columns.map(_.name) == Seq("id") && d.version == 2 && d.filesCovered == 4 && d.problems.isEmpty)
    val byId = compare(spark.sql("SELECT * FROM dbx WHERE id = 17"))
    assert(byId.on == byId.off && byId.filesRead == 1)
    val byS = compare(spark.sql("SELECT * FROM dbx WHERE s = 'k17'"))
    assert(byS.on == byS.off && byS.filesRead == 4)
    spark.sql("DROP BLOOMFILTER INDEX ON TABLE dbx").collect()
    assert(spark.sql("SHOW BLOOM INDEXES ON dbx").count() == 0)
  }

  test("strings under a case-insensitive collation cannot be indexed, and say why") {
    assumeCollations()
    spark.sql("CREATE TABLE coll (s STRING COLLATE UTF8_LCASE) USING parquet")
    spark.sql("INSERT INTO coll VALUES ('abc'), ('def')")
    val e = intercept[org.apache.spark.sql.AnalysisException](spark.sql("CREATE BLOOM INDEX ix ON coll (s)"))
    assert(e.getMessage.contains("UTF8_LCASE") && e.getMessage.contains("only the default UTF8_BINARY collation"))
    assert(spark.sql("SHOW BLOOM INDEXES ON coll").count() == 0)
    assert(spark.sql("SELECT * FROM coll WHERE s = 'ABC'").count() == 1)
  }
}
