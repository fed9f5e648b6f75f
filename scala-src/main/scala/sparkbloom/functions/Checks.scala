package sparkbloom.functions

import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult.{DataTypeMismatch, TypeCheckSuccess}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.types.{DataType, NullType}

import sparkbloom.encoding.SparkEncodings

/** Analysis-time argument checks shared by the sbbf_* functions; each failure names the argument. */
private[functions] object Checks {
  private val ordinals = Seq("first", "second", "third")

  val SupportedTypes = "(\"TINYINT\" or \"SMALLINT\" or \"INT\" or \"BIGINT\" or \"FLOAT\" or \"DOUBLE\" or " +
    "\"DECIMAL\" or \"DATE\" or \"TIMESTAMP\" or \"TIMESTAMP_NTZ\" or \"STRING\" or \"BINARY\")"

  def ok: TypeCheckResult = TypeCheckSuccess

  /** The value argument: any type a Parquet bloom filter can hold (NULL literals too: they hash to NULL). */
  def hashable(index: Int, e: Expression, settings: WriterSettings): TypeCheckResult =
    if (e.dataType == NullType || settings.encoding(e.dataType).isDefined) ok
    else wrongType(index, e, SupportedTypes)

  def wrongType(index: Int, e: Expression, required: String): TypeCheckResult = DataTypeMismatch(
    "UNEXPECTED_INPUT_TYPE",
    Map("paramIndex" -> ordinals(index), "requiredType" -> required, "inputSql" -> quoted(e.sql),
      "inputType" -> quoted(e.dataType.sql)))

  def notConstant(name: String, e: Expression, typeName: String): TypeCheckResult = DataTypeMismatch(
    "NON_FOLDABLE_INPUT", Map("inputName" -> s"`$name`", "inputType" -> quoted(typeName), "inputExpr" -> quoted(e.sql)))

  /** Spark's way of naming a type or an expression in an error: in double quotes. */
  private def quoted(s: String): String = "\"" + s + "\""

  def invalid(message: String): TypeCheckResult =
    DataTypeMismatch("TYPE_CHECK_FAILURE_WITH_HINT", Map("msg" -> message, "hint" -> ""))

  /**
   * Evaluates a foldable argument for checking. A constant that cannot be evaluated (`'many'` cast to a
   * number under ANSI mode, an overflow) is reported as an analysis error rather than thrown from analysis.
   */
  def constant(name: String, e: Expression)(check: Any => TypeCheckResult): TypeCheckResult =
    (try Right(e.eval())
    catch { case scala.util.control.NonFatal(t) => Left(t) }) match {
      case Right(v) => check(v)
      case Left(t) => invalid(s"$name cannot be evaluated: ${t.getMessage}")
    }

  def unsupportedReason(dt: DataType): String = SparkEncodings.unsupportedReason(dt)
}
