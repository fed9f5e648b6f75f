package sparkbloom.sql

import org.apache.spark.sql.catalyst.parser.ParseException

/** A position in the tokens of one statement, with the small vocabulary a recursive-descent parser needs. */
private[sql] final class TokenCursor(val sql: String) {
  private val tokens = SqlLexer.tokenize(sql)
  private var pos = 0

  def peek: Token = peekAt(0)
  def peekAt(n: Int): Token = tokens(math.min(pos + n, tokens.length - 1))
  def next(): Token = { val t = peek; if (pos < tokens.length - 1) pos += 1; t }

  def acceptWord(keyword: String): Boolean = if (peek.isWord(keyword)) { next(); true }
  else false
  def acceptSymbol(s: String): Boolean = if (peek.isSymbol(s)) { next(); true }
  else false

  def expectWord(keyword: String): Token =
    if (peek.isWord(keyword)) next() else throw error(peek, s"expected $keyword")

  def expectSymbol(s: String): Token =
    if (peek.isSymbol(s)) next() else throw error(peek, s"expected '$s'")

  /** An unquoted or back-quoted identifier; `what` names it in the error ("an index name"). */
  def identifier(what: String): Token =
    if (peek.isIdentifier) next() else throw error(peek, s"expected $what")

  /** Zero or more `;` and then the end of the statement. */
  def expectEnd(): Unit = {
    while (acceptSymbol(";")) ()
    if (peek.kind != TokenKind.End) throw error(peek, "unexpected text after the end of the statement")
  }

  /** Items separated by commas, at least one, inside parentheses. */
  def parenthesised[A](item: => A): Seq[A] = {
    expectSymbol("(")
    val items = Seq.newBuilder[A]
    items += item
    while (acceptSymbol(",")) items += item
    if (!peek.isSymbol(")")) throw error(peek, "expected ',' or ')'")
    next()
    items.result()
  }

  def error(at: Token, reason: String): ParseException =
    DdlErrors.syntax(sql, at.offset, near(at), reason)

  private def near(t: Token): String = if (t.kind == TokenKind.End) "end of input" else s"'${t.raw}'"
}
