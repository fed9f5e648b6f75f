package sparkbloom.sql

import org.apache.spark.sql.catalyst.parser.ParseException
import org.apache.spark.sql.catalyst.trees.Origin

import sparkbloom.shims.ParseErrors

/**
 * Errors in a bloom-index statement, raised at parse time. They are Spark's own [[ParseException]]
 * with Spark's `PARSE_SYNTAX_ERROR` condition, so they read (and are caught) like any other syntax
 * error:
 * {{{
 *   [PARSE_SYNTAX_ERROR] Syntax error at or near '1.5': fpp must be between 0 and 1 (exclusive), got 1.5. SQLSTATE:
 * 42601 (line 1, pos 45)
 *
 *   == SQL ==
 *   CREATE BLOOM INDEX i ON t (c) OPTIONS (fpp = 1.5)
 *   ---------------------------------------------^^^
 * }}}
 */
private[sql] object DdlErrors {
  private val Condition = "PARSE_SYNTAX_ERROR"

  /**
   * @param near   what the error is at, as Spark writes it: `'token'` or `end of input`
   * @param reason what is wrong, without a final full stop (Spark's message template adds one)
   */
  def syntax(sql: String, offset: Int, near: String, reason: String): ParseException = {
    val (line, column) = lineAndColumn(sql, offset)
    val at = Origin(line = Some(line), startPosition = Some(column))
    ParseErrors.parseException(sql, at, Condition, Map("error" -> near, "hint" -> s": $reason"))
  }

  /** Spark's convention: lines count from 1, positions within a line from 0. */
  def lineAndColumn(sql: String, offset: Int): (Int, Int) = {
    val before = sql.substring(0, math.min(offset, sql.length))
    val lineStart = before.lastIndexOf('\n') + 1
    (before.count(_ == '\n') + 1, before.length - lineStart)
  }
}
