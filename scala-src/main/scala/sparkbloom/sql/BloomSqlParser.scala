package sparkbloom.sql

import java.util.Locale

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.{ParseException, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.{DataType, StructType}

import sparkbloom.shims.ParserShims

/**
 * Spark's parser plus the bloom-index statements. A statement is ours when its first words (after
 * white space and comments, in any case) are one of
 * {{{
 *   CREATE | DROP | REFRESH | SHOW | DESC | DESCRIBE   BLOOM | BLOOMFILTER   INDEX | INDEXES
 * }}}
 * (for DESC[RIBE] a name must follow too, so `DESCRIBE bloom index` still describes column `index` of
 * table `bloom`), or `SPARKBLOOM API` (the Python helpers' calls over SQL). Ours are parsed by
 * [[BloomDdlParser]]; everything else, and every other method,
 * goes to Spark's parser unchanged, errors included.
 *
 * The methods every supported Spark line has are below; the ones a line added (`parseRoutineParam` in
 * 4.0, `parsePlanWithParameters` in 4.1, `splitStatements` and `parseTemporalTableIdentifier` in 4.3)
 * are forwarded by that line's [[ParserShims]] (scala-src/shims/spark-*). A method a new Spark adds
 * with a default body would silently bypass the delegate: BloomSqlParserForwardingSuite fails then.
 */
class BloomSqlParser(protected val delegate: ParserInterface) extends ParserShims {
  override def parsePlan(sqlText: String): LogicalPlan =
    if (BloomSqlParser.claims(sqlText)) BloomDdlParser.parse(sqlText) else delegate.parsePlan(sqlText)

  /** Used by the parser shims of lines whose added methods must know which statements are ours. */
  protected def claims(sqlText: String): Boolean = BloomSqlParser.claims(sqlText)

  override def parseQuery(sqlText: String): LogicalPlan = delegate.parseQuery(sqlText)
  override def parseExpression(sqlText: String): Expression = delegate.parseExpression(sqlText)
  override def parseTableIdentifier(sqlText: String): TableIdentifier = delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier =
    delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] = delegate.parseMultipartIdentifier(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): DataType = delegate.parseDataType(sqlText)
}

object BloomSqlParser {
  private val Verbs = Set("CREATE", "DROP", "REFRESH", "SHOW", "DESC", "DESCRIBE", "OPTIMIZE", "VACUUM")
  private val Objects = Set("BLOOM", "BLOOMFILTER")
  private val Nouns = Set("INDEX", "INDEXES")

  /** Whether the statement is one of ours: a look at its first words only, never an error. */
  def claims(sqlText: String): Boolean = leadingWords(sqlText, 4) match {
    case Seq("SPARKBLOOM", "API", _*) => true
    case Seq("OPTIMIZE" | "VACUUM", "BLOOMFILTER", _*) => false // not a statement of ours: Spark's (or Delta's) error
    case Seq(verb, obj, noun, rest @ _*) if Objects(obj) && Nouns(noun) && Verbs(verb) =>
      if (verb == "DESC" || verb == "DESCRIBE") rest.headOption.exists(w => w == "`" || SqlLexer.isWordChar(w.head))
      else true
    case _ => false
  }

  /**
   * Up to `n` leading words in upper case, skipping white space and comments. The first character that
   * is not part of a word ends the list and is its last element (so "a.b" gives "A", ".").
   */
  private def leadingWords(sql: String, n: Int): Seq[String] = {
    val words = Seq.newBuilder[String]
    var count = 0
    var i = skipSpaceAndComments(sql, 0)
    while (count < n && i < sql.length) {
      var j = i
      while (j < sql.length && SqlLexer.isWordChar(sql.charAt(j))) j += 1
      if (j == i) { words += sql.substring(i, i + 1); count = n }
      else { words += sql.substring(i, j).toUpperCase(Locale.ROOT); count += 1 }
      i = skipSpaceAndComments(sql, j)
    }
    words.result()
  }

  /** Like the lexer's, but an unclosed comment just ends the text: the claim check never throws. */
  private def skipSpaceAndComments(sql: String, from: Int): Int =
    try SqlLexer.skipSpaceAndComments(sql, from)
    catch { case _: ParseException => sql.length }
}
