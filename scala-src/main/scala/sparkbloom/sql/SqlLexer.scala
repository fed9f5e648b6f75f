package sparkbloom.sql

import java.util.Locale

/** What a token of a bloom-index statement is. */
private[sql] sealed trait TokenKind
private[sql] object TokenKind {
  case object Word extends TokenKind // keyword or unquoted identifier: letters, digits, '_'
  case object Quoted extends TokenKind // `back quoted identifier`, text without the quotes
  case object Number extends TokenKind // 12, 0.01, 1e6, .5 (a Spark suffix such as L or BD is dropped)
  case object Str extends TokenKind // 'string' or "string", text unescaped
  case object Symbol extends TokenKind // ( ) , = . ; + -
  case object End extends TokenKind
}

/**
 * One token. `text` is the value (unquoted, unescaped); `offset` is where it starts in the statement
 * and `raw` is the source text, both for error messages.
 */
private[sql] final case class Token(kind: TokenKind, text: String, offset: Int, raw: String) {
  def upper: String = text.toUpperCase(Locale.ROOT)
  def isWord(keyword: String): Boolean = kind == TokenKind.Word && text.equalsIgnoreCase(keyword)
  def isSymbol(s: String): Boolean = kind == TokenKind.Symbol && text == s
  def isIdentifier: Boolean = kind == TokenKind.Word || kind == TokenKind.Quoted
}

/**
 * Splits a bloom-index statement into tokens, following Spark's lexical rules where they matter here:
 * `--` and (nested) `/* */` comments, back-quoted identifiers with ```` `` ```` as an escaped quote,
 * strings in single or double quotes with backslash escapes. Anything else is a syntax error.
 */
private[sql] object SqlLexer {
  private val Symbols = "(),=.;+-"
  private val NumericSuffixes = Seq("BD", "L", "S", "Y", "D", "F") // longest first

  def isWordChar(c: Char): Boolean = Character.isLetterOrDigit(c) || c == '_'

  def tokenize(sql: String): IndexedSeq[Token] = {
    val out = IndexedSeq.newBuilder[Token]
    var i = skipSpaceAndComments(sql, 0)
    while (i < sql.length) {
      val c = sql.charAt(i)
      val tok =
        if (c == '`') quoted(sql, i)
        else if (c == '\'' || c == '"') string(sql, i)
        else if (c.isDigit || (c == '.' && i + 1 < sql.length && sql.charAt(i + 1).isDigit)) numberOrWord(sql, i)
        else if (isWordChar(c)) word(sql, i)
        else if (Symbols.indexOf(c) >= 0) Token(TokenKind.Symbol, c.toString, i, c.toString)
        else throw DdlErrors.syntax(sql, i, s"'$c'", "unexpected character")
      out += tok
      i = skipSpaceAndComments(sql, i + tok.raw.length)
    }
    out += Token(TokenKind.End, "", sql.length, "")
    out.result()
  }

  /** The index of the first character at or after `from` that is neither white space nor comment. */
  def skipSpaceAndComments(sql: String, from: Int): Int = {
    var i = from
    var more = true
    while (more && i < sql.length) {
      if (sql.charAt(i).isWhitespace) i += 1
      else if (sql.startsWith("--", i)) {
        val nl = sql.indexOf('\n', i)
        i = if (nl < 0) sql.length else nl + 1
      } else if (sql.startsWith("/*", i)) i = endOfComment(sql, i)
      else more = false
    }
    i
  }

  private def endOfComment(sql: String, start: Int): Int = {
    var depth = 0
    var i = start
    while (i < sql.length) {
      if (sql.startsWith("/*", i)) { depth += 1; i += 2 }
      else if (sql.startsWith("*/", i)) {
        depth -= 1; i += 2
        if (depth == 0) return i
      } else i += 1
    }
    throw DdlErrors.syntax(sql, start, "'/*'", "the comment is never closed")
  }

  private def word(sql: String, start: Int): Token = {
    var i = start
    while (i < sql.length && isWordChar(sql.charAt(i))) i += 1
    val w = sql.substring(start, i)
    Token(TokenKind.Word, w, start, w)
  }

  private def numberOrWord(sql: String, start: Int): Token = {
    var i = start
    def digits(): Unit = while (i < sql.length && sql.charAt(i).isDigit) i += 1
    digits()
    if (i < sql.length && sql.charAt(i) == '.') { i += 1; digits() }
    if (i < sql.length && (sql.charAt(i) == 'e' || sql.charAt(i) == 'E')) {
      var j = i + 1
      if (j < sql.length && (sql.charAt(j) == '+' || sql.charAt(j) == '-')) j += 1
      if (j < sql.length && sql.charAt(j).isDigit) { i = j; digits() }
    }
    val number = sql.substring(start, i)
    val rest = word(sql, i).text
    if (rest.isEmpty) Token(TokenKind.Number, number, start, number)
    else if (NumericSuffixes.exists(_.equalsIgnoreCase(rest))) Token(TokenKind.Number, number, start, number + rest)
    else if (!number.contains('.')) word(sql, start) // like Spark, `1a` is an identifier
    else throw DdlErrors.syntax(sql, start, s"'$number$rest'", "not a number")
  }

  private def quoted(sql: String, start: Int): Token = {
    val sb = new StringBuilder
    var i = start + 1
    while (i < sql.length) {
      if (sql.charAt(i) == '`') {
        if (sql.startsWith("``", i)) { sb += '`'; i += 2 }
        else return Token(TokenKind.Quoted, sb.result(), start, sql.substring(start, i + 1))
      } else { sb += sql.charAt(i); i += 1 }
    }
    throw DdlErrors.syntax(sql, start, "'`'", "the quoted identifier is never closed")
  }

  private def string(sql: String, start: Int): Token = {
    val q = sql.charAt(start)
    val sb = new StringBuilder
    var i = start + 1
    while (i < sql.length) {
      val c = sql.charAt(i)
      if (c == '\\' && i + 1 < sql.length) { sb += sql.charAt(i + 1); i += 2 }
      else if (c == q && sql.startsWith(s"$q$q", i)) { sb += q; i += 2 }
      else if (c == q) return Token(TokenKind.Str, sb.result(), start, sql.substring(start, i + 1))
      else { sb += c; i += 1 }
    }
    throw DdlErrors.syntax(sql, start, s"'$q'", "the string is never closed")
  }
}
