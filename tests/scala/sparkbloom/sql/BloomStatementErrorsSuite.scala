package sparkbloom.sql

import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.execution.SparkSqlParser
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.testing.TestShims.errorCondition

/**
 * Every error a bloom-index statement can raise, at parse time, as Spark's PARSE_SYNTAX_ERROR naming
 * the token and its position. In the table, `»` marks where the error is reported (it is removed
 * before parsing).
 */
class BloomStatementErrorsSuite extends AnyFunSuite {
  private val parser = new BloomSqlParser(new SparkSqlParser())

  private val cases: Seq[(String, String, String)] = Seq(
    // (statement with », Spark's "at or near" text, reason)
    // lexical
    ("CREATE BLOOM INDEX i ON t (a) »#", "'#'", "unexpected character"),
    ("CREATE BLOOM INDEX i ON t (a) »/* never closed", "'/*'", "the comment is never closed"),
    ("CREATE BLOOM INDEX »`i ON t (a)", "'`'", "the quoted identifier is never closed"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = »'0.1))", "'''", "the string is never closed"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = »0.1x))", "'0.1x'", "not a number"),
    // keywords and structure
    ("CREATE BLOOM »INDEXES i ON t (a)", "'INDEXES'", "expected INDEX"),
    ("SHOW BLOOM »INDEX ON t", "'INDEX'", "expected INDEXES"),
    ("REFRESH »BLOOMFILTER INDEX i ON t", "'BLOOMFILTER'", "expected BLOOM"),
    ("DROP BLOOM INDEX i »t", "'t'", "expected ON"),
    ("CREATE BLOOM INDEX IF »EXISTS i ON t (a)", "'EXISTS'", "expected NOT"),
    ("CREATE BLOOM INDEX IF NOT »EXIST i ON t (a)", "'EXIST'", "expected EXISTS"),
    ("DROP BLOOM INDEX IF »NOT EXISTS i ON t", "'NOT'", "expected EXISTS"),
    ("CREATE BLOOM INDEX »ON t (a)", "'ON'", "expected an index name"),
    ("DROP BLOOM INDEX »'i' ON t", "''i''", "expected an index name"),
    ("SHOW BLOOM INDEXES ON »", "end of input", "expected a table name or parquet.`path`"),
    ("SHOW BLOOM INDEXES ON »(t)", "'('", "expected a table name or parquet.`path`"),
    ("SHOW BLOOM INDEXES ON db.»", "end of input", "expected a name part after '.'"),
    ("SHOW BLOOM INDEXES ON parquet.»``", "'``'", "the path is empty"),
    ("SHOW BLOOM INDEXES ON t »extra", "'extra'", "unexpected text after the end of the statement"),
    ("REFRESH BLOOM INDEX i ON t »PARTIAL", "'PARTIAL'", "unexpected text after the end of the statement"),
    ("CREATE BLOOM INDEX i ON t »a", "'a'", "expected '('"),
    ("CREATE BLOOM INDEX i ON t »", "end of input", "expected '('"),
    ("CREATE BLOOM INDEX i ON t (»)", "')'", "expected a column name"),
    ("CREATE BLOOM INDEX i ON t (a »b)", "'b'", "expected ',' or ')'"),
    ("CREATE BLOOM INDEX i ON t (a, b»", "end of input", "expected ',' or ')'"),
    ("CREATE BLOOM INDEX i ON t (s».x)", "'.'", "nested columns cannot be indexed; name a top-level column"),
    ("CREATE BLOOM INDEX i ON t (a, b, »A)", "'A'", "column A is listed twice"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS »fpp = 0.1", "'fpp'", "expected '('"),
    ("VACUUM BLOOM INDEX i ON t RETAIN »x HOURS", "'x'", "expected a number of hours, 0 or more"),
    ("OPTIMIZE BLOOM INDEX i ON t »FULL", "'FULL'", "unexpected text after the end of the statement"),
    // options
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (»))", "')'", "expected an option name"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (»= 1))", "'='", "expected an option name"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (»size = 1)", "'size'",
      "unknown option size; the options are false_reads_per_key, fpp, ndv and maintain_on_write"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (»numItems = 1)", "'numItems'",
      "unknown option numItems; the options are false_reads_per_key, fpp, ndv and maintain_on_write"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = 0.1, »FPP = 0.2))", "'FPP'", "option FPP is given twice"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (false_reads_per_key = »0)", "'0'",
      "false_reads_per_key must be a positive number, got 0"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (false_reads_per_key = »'x')", "''x''",
      "false_reads_per_key must be a positive number, got 'x'"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp »0.1))", "'0.1'", "expected '='"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = »abc))", "'abc'", "expected a number"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = -»'0.1'))", "''0.1''", "expected a number"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = »'abc'))", "''abc''", "fpp must be a number, got 'abc'"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = »0))", "'0'", "fpp must be between 0 and 1 (exclusive), got 0"),
    ("CREATE BLOOM INDEX i ON t (a OPTIONS (fpp = »1))", "'1'", "fpp must be between 0 and 1 (exclusive), got 1"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (fpp = »1.5)", "'1.5'", "fpp must be between 0 and 1 (exclusive), got 1.5"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (fpp = »-0.1)", "'-'", "fpp must be between 0 and 1 (exclusive), got -0.1"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (fpp = »1e-400)", "'1e-400'",
      "fpp must be between 0 and 1 (exclusive), got 1e-400"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (ndv = »0)", "'0'", "ndv must be a positive integer, got 0"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (ndv = »-5)", "'-'", "ndv must be a positive integer, got -5"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (ndv = »1.5)", "'1.5'", "ndv must be a positive integer, got 1.5"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (ndv = »1e19)", "'1e19'", "ndv must be a positive integer, got 1e19"),
    ("CREATE BLOOM INDEX i ON t (a) OPTIONS (ndv = »'10x')", "''10x''", "ndv must be a positive integer, got '10x'"),
    // Databricks' statements
    ("CREATE BLOOMFILTER INDEX ON t »(a)", "'('", "expected FOR"),
    ("CREATE BLOOMFILTER INDEX ON t FOR »(a)", "'('", "expected COLUMNS"),
    ("CREATE BLOOMFILTER INDEX »idx ON t FOR COLUMNS(a)", "'idx'", "expected ON"),
    ("CREATE BLOOMFILTER INDEX ON t FOR COLUMNS(a OPTIONS (»ndv = 5))", "'ndv'",
      "unknown option ndv; the options are false_reads_per_key, fpp, numItems and maintain_on_write"),
    ("CREATE BLOOMFILTER INDEX ON t FOR COLUMNS(a OPTIONS (numItems = »0))", "'0'",
      "numItems must be a positive integer, got 0"),
    ("DROP BLOOMFILTER INDEX ON t FOR COLUMNS(a, »a)", "'a'", "column a is listed twice"),
    ("DROP BLOOMFILTER INDEX ON t FOR COLUMNS(a »OPTIONS (fpp = 0.1))", "'OPTIONS'", "expected ',' or ')'")
  )

  cases.foreach { case (marked, near, reason) =>
    test(s"$marked  ->  $reason") {
      val offset = marked.indexOf('»')
      val sql = marked.replace("»", "")
      val e = intercept[ParseException](parser.parsePlan(sql))
      assert(errorCondition(e) == "PARSE_SYNTAX_ERROR")
      assert(e.getMessage.contains(s"Syntax error at or near $near: $reason."), e.getMessage)
      assert((e.start.line, e.start.startPosition) == ((Some(1), Some(offset))), e.getMessage)
    }
  }

  test("the message points at the line and column, with Spark's == SQL == excerpt") {
    val sql = "CREATE BLOOM INDEX i\n  ON t (a)\n  OPTIONS (fpp = 2)"
    val e = intercept[ParseException](parser.parsePlan(sql))
    assert((e.start.line, e.start.startPosition) == ((Some(3), Some(17))))
    assert(
      e.getMessage.trim.startsWith("[PARSE_SYNTAX_ERROR] Syntax error at or near '2': fpp must be between 0 and 1"))
    assert(e.getMessage.contains("(line 3, pos 17)"))
    assert(
      e.getMessage.contains("== SQL ==\nCREATE BLOOM INDEX i\n  ON t (a)\n  OPTIONS (fpp = 2)\n-----------------^^^"))
  }

  test("a statement that reaches the grammar without one of our verbs names the verbs it knows") {
    val e = intercept[ParseException](BloomDdlParser.parse("ALTER BLOOM INDEX i ON t"))
    assert(e.getMessage.contains(
        "Syntax error at or near 'ALTER': expected CREATE, DROP, REFRESH, OPTIMIZE, VACUUM, SHOW or DESCRIBE."))
  }
}
