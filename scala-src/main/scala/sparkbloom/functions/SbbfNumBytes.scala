package sparkbloom.functions

import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{BinaryExpression, Expression, ImplicitCastInputTypes}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, DoubleType, IntegerType, LongType}

import sparkbloom.sbbf.Sizing

/**
 * `sbbf_num_bytes(ndv, fpp)`: the bitset size in bytes for `ndv` distinct values at false-positive
 * probability `fpp` (the Parquet/arrow-rs formula, next power of two, 32 B to 128 MiB). `fpp` must be a
 * constant in (0, 1); `ndv` may vary per row but must not be negative.
 */
case class SbbfNumBytes(ndv: Expression, fpp: Expression)
  extends BinaryExpression with ImplicitCastInputTypes with CodegenFallback {

  override def left: Expression = ndv
  override def right: Expression = fpp
  override def prettyName: String = "sbbf_num_bytes"
  override def dataType: DataType = IntegerType
  // (The element type, AbstractDataType, is private to Spark; the override's type is inferred.)
  override def inputTypes = Seq(LongType, DoubleType)

  override def checkInputDataTypes(): TypeCheckResult = {
    val types = super.checkInputDataTypes()
    if (types.isFailure) types
    else if (!fpp.foldable) Checks.notConstant("fpp", fpp, "DOUBLE")
    else Checks.constant("fpp", fpp) {
      case f: Double if !(f > 0 && f < 1) => Checks.invalid(s"fpp must be in (0, 1), got $f")
      case _ if ndv.foldable =>
        Checks.constant("ndv", ndv) {
          case n: Long if n < 0 => Checks.invalid(s"ndv must not be negative, got $n")
          case _ => Checks.ok
        }
      case _ => Checks.ok
    }
  }

  override protected def nullSafeEval(n: Any, f: Any): Any = {
    val distinct = n.asInstanceOf[Long]
    if (distinct < 0) throw new IllegalArgumentException(s"sbbf_num_bytes: ndv must not be negative, got $distinct")
    Sizing.numBytes(distinct, f.asInstanceOf[Double])
  }

  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): SbbfNumBytes =
    copy(ndv = newLeft, fpp = newRight)
}
