package sparkbloom.sql

import java.util.Locale

import scala.util.Try

/** The validated OPTIONS of an index or of one of its columns. */
private[sql] final case class IndexOptions(fpp: Option[Double] = None, ndv: Option[Long] = None,
                                           falseReadsPerKey: Option[Double] = None,
                                           maintainOnWrite: Option[Boolean] = None) {
  /** The table-level options as the facade takes them: keys `fpp`, `ndv` and `false_reads_per_key`. */
  def asMap: Map[String, String] = fpp.map("fpp" -> _.toString).toMap ++ ndv.map("ndv" -> _.toString) ++
    falseReadsPerKey.map(IndexOptions.BudgetKey -> _.toString) ++
    maintainOnWrite.map(IndexOptions.MaintainKey -> _.toString)
}

/**
 * `OPTIONS (false_reads_per_key = 0.1, fpp = 0.01, ndv = 1000000)`. Keys are case-insensitive (and may be
 * quoted); values are numeric literals or strings holding one. Our statements call the distinct-value cap
 * `ndv`, Databricks' call it `numItems`; both mean the same thing and land in [[IndexOptions.ndv]].
 * `fpp` and `false_reads_per_key` exclude each other (the facade checks that, with the column's context).
 */
private[sql] object IndexOptions {
  val NativeNdvKey = "ndv"
  val DatabricksNdvKey = "numItems"
  val BudgetKey = "false_reads_per_key"
  val MaintainKey = "maintain_on_write"

  /** Parses the parenthesised list that follows the keyword OPTIONS. */
  def parse(in: TokenCursor, ndvKey: String): IndexOptions = {
    var result = IndexOptions()
    var seen = Set.empty[String]
    in.parenthesised {
      val keyToken = in.peek
      if (!keyToken.isIdentifier && keyToken.kind != TokenKind.Str) throw in.error(keyToken, "expected an option name")
      in.next()
      val key = keyToken.text.toLowerCase(Locale.ROOT)
      if (key != "fpp" && key != ndvKey.toLowerCase(Locale.ROOT) && key != BudgetKey && key != MaintainKey)
        throw in.error(keyToken,
          s"unknown option ${keyToken.text}; the options are $BudgetKey, fpp, $ndvKey and $MaintainKey")
      if (seen(key)) throw in.error(keyToken, s"option ${keyToken.text} is given twice")
      seen += key
      in.expectSymbol("=")
      val (valueToken, value) =
        if (key == MaintainKey && (in.peek.isWord("true") || in.peek.isWord("false"))) {
          val t = in.next(); (t, t.text)
        } else literal(in)
      def orFail[A](checked: Either[String, A]): A = checked.fold(msg => throw in.error(valueToken, msg), identity)
      result =
        if (key == MaintainKey) result.copy(maintainOnWrite = Some(orFail(boolean(MaintainKey, value))))
        else if (key == "fpp") result.copy(fpp = Some(orFail(fpp(value))))
        else if (key == BudgetKey) result.copy(falseReadsPerKey = Some(orFail(positiveNumber(BudgetKey, value))))
        else result.copy(ndv = Some(orFail(positiveCount(ndvKey, value))))
    }
    result
  }

  /** true or false (a keyword or a string). */
  def boolean(key: String, value: String): Either[String, Boolean] = value.trim.toLowerCase(Locale.ROOT) match {
    case "true" => Right(true)
    case "false" => Right(false)
    case _ => Left(s"$key must be true or false, got '$value'")
  }

  /** A false-positive probability strictly between 0 and 1. */
  def fpp(value: String): Either[String, Double] = number(value).map(_.toDouble) match {
    case None => Left(s"fpp must be a number, got '$value'")
    case Some(v) if v > 0 && v < 1 => Right(v) // tested as a double: 1e-400 and 0.99...9 round out of range
    case Some(_) => Left(s"fpp must be between 0 and 1 (exclusive), got $value")
  }

  /** A positive, finite number. */
  def positiveNumber(key: String, value: String): Either[String, Double] = number(value).map(_.toDouble) match {
    case Some(v) if v > 0 && !v.isInfinite => Right(v)
    case Some(_) => Left(s"$key must be a positive number, got $value")
    case None => Left(s"$key must be a positive number, got '$value'")
  }

  /** A number of distinct values: a whole number from 1 to Long.MaxValue. */
  def positiveCount(key: String, value: String): Either[String, Long] = number(value) match {
    case Some(v) if v.isWhole && v > 0 && v <= Long.MaxValue => Right(v.toLongExact)
    case Some(_) => Left(s"$key must be a positive integer, got $value")
    case None => Left(s"$key must be a positive integer, got '$value'")
  }

  private def number(value: String): Option[BigDecimal] = Try(BigDecimal(value.trim)).toOption

  /** A numeric literal with an optional sign, or a string. Returns the token to blame and the value. */
  private def literal(in: TokenCursor): (Token, String) = {
    val first = in.peek
    val sign = if (first.isSymbol("-") || first.isSymbol("+")) { in.next(); first.text }
    else ""
    val t = in.peek
    if (t.kind == TokenKind.Number) { in.next(); (first, sign + t.text) }
    else if (t.kind == TokenKind.Str && sign.isEmpty) { in.next(); (t, t.text) }
    else throw in.error(t, "expected a number")
  }
}
