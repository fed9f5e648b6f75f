package sparkbloom.sql

import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SparkSqlParser
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.testing.TestShims.errorCondition

/** What the parser claims, and that everything else reaches Spark's parser unchanged, errors included. */
class BloomSqlParserDelegationSuite extends AnyFunSuite {
  private val spark = new SparkSqlParser()
  private val parser = new BloomSqlParser(spark)

  private val claimed = Seq(
    "CREATE BLOOM INDEX i ON t (a)",
    "  create bloom index",
    "/* c */ DROP -- c\n BLOOM INDEX i ON t",
    "REFRESH BLOOM INDEX i ON t",
    "SHOW BLOOM INDEXES ON t",
    "SHOW BLOOM INDEX ON t", // ours, to say "expected INDEXES"
    "DESCRIBE BLOOM INDEX i ON t",
    "desc bloom index `i` on t",
    "CREATE BLOOMFILTER INDEX ON t FOR COLUMNS(a)",
    "DROP BLOOMFILTER INDEX ON t",
    "OPTIMIZE BLOOM INDEX i ON t",
    "VACUUM BLOOM INDEX i ON t RETAIN 1 HOURS",
    "SPARKBLOOM API list '{}'",
    " sparkbloom api")

  private val notClaimed = Seq(
    "SELECT * FROM bloom",
    "CREATE TABLE bloom (index INT) USING parquet",
    "CREATE INDEX i ON t (a)",
    "DROP INDEX i ON t",
    "SHOW BLOOM",
    "CREATE BLOOM TABLE x",
    "DESCRIBE bloom index", // column `index` of table `bloom`
    "DESCRIBE bloom index.x", // field x of that column
    "DESCRIBE TABLE bloom",
    "REFRESH TABLE bloom",
    "CREATE BLOOMINDEX i ON t (a)",
    "SELECT sparkbloom FROM api",
    "OPTIMIZE bloom", // Delta's OPTIMIZE of a table `bloom`
    "OPTIMIZE bloom ZORDER BY (index)",
    "VACUUM bloom RETAIN 168 HOURS",
    "OPTIMIZE BLOOMFILTER INDEX ON t",
    "SPARKBLOOM",
    "/* CREATE BLOOM INDEX */ SELECT 1",
    "-- CREATE BLOOM INDEX i ON t (a)",
    "/* never closed CREATE BLOOM INDEX",
    "",
    "   ")

  claimed.foreach { sql => test(s"claims: $sql") { assert(BloomSqlParser.claims(sql)) } }
  notClaimed.foreach { sql => test(s"leaves to Spark: '$sql'") { assert(!BloomSqlParser.claims(sql)) } }

  test("SQL it does not own parses to exactly what Spark's parser makes of it") {
    Seq("SELECT a FROM bloom WHERE index = 1",
      "CREATE TABLE bloom (index INT) USING parquet",
      "DESCRIBE bloom index",
      "REFRESH TABLE bloom",
      "SHOW TABLES").foreach { sql =>
      // Compared as trees with expression ids left out: each parse makes fresh output attributes.
      def tree(p: LogicalPlan): String = p.treeString.replaceAll("#\\d+", "")
      assert(tree(parser.parsePlan(sql)) == tree(spark.parsePlan(sql)), sql)
    }
  }

  test("a syntax error in SQL it does not own is Spark's own PARSE_SYNTAX_ERROR, unchanged") {
    Seq("SELEC 1", "SHOW BLOOM", "CREATE BLOOM TABLE x", "CREATE TABLE (").foreach { sql =>
      val ours = intercept[ParseException](parser.parsePlan(sql))
      val theirs = intercept[ParseException](spark.parsePlan(sql))
      assert(errorCondition(ours) == "PARSE_SYNTAX_ERROR", sql)
      assert(ours.getMessage == theirs.getMessage, sql)
    }
    assert(intercept[ParseException](parser.parsePlan("SELEC 1")).getMessage.trim
        .startsWith("[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'."))
  }

  test("Spark's other errors, such as an empty statement, are unchanged too") {
    val e = intercept[ParseException](parser.parsePlan("  "))
    assert(errorCondition(e) == "PARSE_EMPTY_STATEMENT")
  }
}
