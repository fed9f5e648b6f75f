package sparkbloom.sql

import scala.collection.mutable

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal}
import org.apache.spark.sql.catalyst.parser.{ParseException, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, OneRowRelation}
import org.apache.spark.sql.execution.SparkSqlParser
import org.apache.spark.sql.types.{DataType, IntegerType, StructType}
import org.scalatest.funsuite.AnyFunSuite

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
    "SHOW BLOOM INDEX ON t",          // ours, to say "expected INDEXES"
    "DESCRIBE BLOOM INDEX i ON t",
    "desc bloom index `i` on t",
    "CREATE BLOOMFILTER INDEX ON t FOR COLUMNS(a)",
    "DROP BLOOMFILTER INDEX ON t")

  private val notClaimed = Seq(
    "SELECT * FROM bloom",
    "CREATE TABLE bloom (index INT) USING parquet",
    "CREATE INDEX i ON t (a)",
    "DROP INDEX i ON t",
    "SHOW BLOOM",
    "CREATE BLOOM TABLE x",
    "DESCRIBE bloom index",           // column `index` of table `bloom`
    "DESCRIBE bloom index.x",         // field x of that column
    "DESCRIBE TABLE bloom",
    "REFRESH TABLE bloom",
    "CREATE BLOOMINDEX i ON t (a)",
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
      assert(ours.getCondition == "PARSE_SYNTAX_ERROR", sql)
      assert(ours.getMessage == theirs.getMessage, sql)
    }
    assert(intercept[ParseException](parser.parsePlan("SELEC 1")).getMessage.trim
      .startsWith("[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'."))
  }

  test("Spark's other errors, such as an empty statement, are unchanged too") {
    val e = intercept[ParseException](parser.parsePlan("  "))
    assert(e.getCondition == "PARSE_EMPTY_STATEMENT")
  }

  test("every ParserInterface method goes to the delegate with the text unchanged") {
    val calls = mutable.Buffer.empty[(String, String)]
    val recorder = new ParserInterface {
      private def record[A](method: String, sql: String, result: A): A = { calls += method -> sql; result }
      override def parsePlan(s: String): LogicalPlan = record("parsePlan", s, OneRowRelation())
      override def parseQuery(s: String): LogicalPlan = record("parseQuery", s, OneRowRelation())
      override def parseExpression(s: String): Expression = record("parseExpression", s, Literal(1))
      override def parseTableIdentifier(s: String): TableIdentifier = record("parseTableIdentifier", s, TableIdentifier("t"))
      override def parseFunctionIdentifier(s: String): FunctionIdentifier =
        record("parseFunctionIdentifier", s, FunctionIdentifier("f"))
      override def parseMultipartIdentifier(s: String): Seq[String] = record("parseMultipartIdentifier", s, Seq("a"))
      override def parseTableSchema(s: String): StructType = record("parseTableSchema", s, new StructType())
      override def parseDataType(s: String): DataType = record("parseDataType", s, IntegerType)
      override def parseRoutineParam(s: String): StructType = record("parseRoutineParam", s, new StructType())
    }
    val p = new BloomSqlParser(recorder)
    assert(p.parsePlan("SELECT 1") == OneRowRelation())
    assert(p.parseQuery("CREATE BLOOM INDEX i ON t (a)") == OneRowRelation()) // not a query: Spark decides
    assert(p.parseExpression("1 + 1") == Literal(1))
    assert(p.parseTableIdentifier("db.t") == TableIdentifier("t"))
    assert(p.parseFunctionIdentifier("f") == FunctionIdentifier("f"))
    assert(p.parseMultipartIdentifier("a") == Seq("a"))
    assert(p.parseTableSchema("a INT") == new StructType())
    assert(p.parseDataType("INT") == IntegerType)
    assert(p.parseRoutineParam("a INT") == new StructType())
    assert(calls.toSeq == Seq(
      "parsePlan" -> "SELECT 1", "parseQuery" -> "CREATE BLOOM INDEX i ON t (a)", "parseExpression" -> "1 + 1",
      "parseTableIdentifier" -> "db.t", "parseFunctionIdentifier" -> "f", "parseMultipartIdentifier" -> "a",
      "parseTableSchema" -> "a INT", "parseDataType" -> "INT", "parseRoutineParam" -> "a INT"))
  }

  test("ParserInterface in this Spark has exactly the methods the parser overrides") {
    // A new abstract method fails compilation; a new default method would be inherited silently. This
    // test notices either on a Spark upgrade.
    val declared = classOf[ParserInterface].getMethods.map(_.getName).toSet
    assert(declared == Set("parsePlan", "parseQuery", "parseExpression", "parseTableIdentifier",
      "parseFunctionIdentifier", "parseMultipartIdentifier", "parseTableSchema", "parseDataType",
      "parseRoutineParam"))
    val overridden = classOf[BloomSqlParser].getDeclaredMethods.map(_.getName).toSet
    assert(declared.subsetOf(overridden))
  }
}
