package sparkbloom.sql

import java.nio.file.Files

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper

import sparkbloom.scan.BloomScanMetricsExec
import sparkbloom.testing.SparkSessionSuite
import sparkbloom.testing.TestShims.{errorCondition, sqlParser}

/** The parser inside a real session, registered the way users do it: spark.sql.extensions. */
class BloomSqlSessionSuite extends SparkSessionSuite {
  override protected def sparkConf: Map[String, String] = Map("spark.sql.shuffle.partitions" -> "1")

  test("the session parses with sparkbloom's parser") {
    assert(sqlParser(spark).isInstanceOf[BloomSqlParser])
  }

  test("SQL statements create, show, describe, refresh and drop an index on a path") {
    val dir = java.nio.file.Files.createTempDirectory("sqlsuite").toString + "/t"
    spark.range(0, 1000, 1, 4).selectExpr("id", "cast(id as string) as s").write.parquet(dir)
    assert(spark.sql(s"SHOW BLOOM INDEXES ON parquet.`$dir`").collect().isEmpty)
    val created =
      spark.sql(s"CREATE BLOOM INDEX ix ON parquet.`$dir` (id, s OPTIONS (fpp = 0.001)) OPTIONS (fpp = 0.05)").collect()
    assert(created.length == 1 && created.head.getAs[Long]("files_indexed") == 4L)
    val shown = spark.sql(s"SHOW BLOOM INDEXES ON parquet.`$dir`").collect()
    assert(shown.map(_.getAs[String]("name")).toSeq == Seq("ix"))
    val info =
      spark.sql(s"DESCRIBE BLOOM INDEX ix ON parquet.`$dir`").collect().map(r => r.getString(0) -> r.getString(1)).toMap
    assert(info("Files Covered") == "4" && info("Version") == "1")
    assert(spark.sql(s"SELECT * FROM parquet.`$dir` WHERE id = 7").collect().map(_.getLong(0)).toSeq == Seq(7L))
    spark.sql(s"REFRESH BLOOM INDEX ix ON parquet.`$dir` FULL").collect()
    val info2 =
      spark.sql(s"DESCRIBE BLOOM INDEX ix ON parquet.`$dir`").collect().map(r => r.getString(0) -> r.getString(1)).toMap
    assert(info2("Version") == "2")
    spark.sql(s"DROP BLOOM INDEX ix ON parquet.`$dir`").collect()
    assert(spark.sql(s"SHOW BLOOM INDEXES ON parquet.`$dir`").collect().isEmpty)
    val e =
      intercept[org.apache.spark.sql.AnalysisException](spark.sql(s"CREATE BLOOM INDEX ix ON parquet.`$dir` (nope)"))
    assert(e.getMessage.contains("Column nope does not exist"))
  }

  test("SPARKBLOOM API: the Python helpers' calls over SQL (Spark Connect), a DataFrame as a temporary view") {
    val dir = java.nio.file.Files.createTempDirectory("apisuite").toString + "/t"
    spark.range(0, 1000, 1, 4).selectExpr("id AS k", "cast(id as string) as s").write.parquet(dir)
    def call(method: String, json: String): String = {
      val df = spark.sql(s"SPARKBLOOM API $method '${json.replace("\\", "\\\\").replace("'", "\\'")}'")
      val rows = df.collect()
      assert(rows.length == 1 && df.schema.fieldNames.toSeq == Seq("result"))
      rows.head.getString(0)
    }
    spark.read.parquet(dir).where("k > 3").createOrReplaceTempView("api_df")
    val created = call("create", """{"view": "api_df", "columns": ["k"], "name": "ix", "fpp": 0.01}""")
    assert(created.contains("\"name\":\"ix\"") && created.contains("\"files_covered\":4"), created)
    assert(call("list", s"""{"table": "$dir"}""").contains("\"name\":\"ix\""))
    // A query's scan node is recorded under its id, for the session that ran it only.
    val q = spark.read.parquet(dir).where("k = 7")
    assert(q.collect().map(_.getLong(0)).toSeq == Seq(7L))
    object Plans extends AdaptiveSparkPlanHelper
    val ids = Plans.collect(q.queryExecution.executedPlan) { case b: BloomScanMetricsExec => b.id }
    assert(ids.nonEmpty)
    val scans = call("scans", s"""{"plan_ids": [${ids.mkString(", ")}, -1]}""")
    assert(scans.contains("\"predicate\":\"k = 7\"") && scans.contains("\"files_total\":4"), scans)
    assert(spark.newSession().sql(s"""SPARKBLOOM API scans '{"plan_ids": [${ids.head}]}'""").head.getString(0) == "[]")
    assert(call("drop", s"""{"table": "$dir", "name": "ix"}""") == "true")
    val unknown = intercept[IllegalArgumentException](call("nope", "{}"))
    assert(unknown.getMessage.contains("Unknown sparkbloom API method 'nope'"))
    val missing = intercept[IllegalArgumentException](call("describe", "{}"))
    assert(missing.getMessage.contains("the argument 'table' is missing"))
    intercept[ParseException](spark.sql("SPARKBLOOM API list 42"))
    spark.catalog.dropTempView("api_df")
  }

  test("a bad statement fails at parse time, before any command runs") {
    val e = intercept[ParseException](spark.sql("CREATE BLOOM INDEX i ON parquet.`/tmp/x` (a) OPTIONS (fpp = 2)"))
    assert(e.getMessage.contains("fpp must be between 0 and 1 (exclusive), got 2"))
  }

  test("ordinary SQL still works, Parquet path tables included") {
    assert(spark.sql("SELECT 1 AS one, 'bloom' AS index").collect().toSeq == Seq(Row(1, "bloom")))
    val dir = Files.createTempDirectory("sparkbloom-sql").resolve("t").toString
    spark.range(100).selectExpr("id", "id % 7 AS k").write.parquet(dir)
    assert(spark.sql(s"SELECT count(*) FROM parquet.`$dir` WHERE k = 3").collect().toSeq == Seq(Row(14L)))
    spark.sql(s"CREATE TEMPORARY VIEW bloom USING parquet OPTIONS (path '$dir')")
    assert(spark.sql("DESCRIBE bloom k").collect().map(_.getString(0)).contains("col_name"))
  }

  test("Spark's own syntax errors are unchanged") {
    val e = intercept[ParseException](spark.sql("SELEC 1"))
    assert(errorCondition(e) == "PARSE_SYNTAX_ERROR")
    assert(e.getMessage.contains("Syntax error at or near 'SELEC'."))
  }
}
