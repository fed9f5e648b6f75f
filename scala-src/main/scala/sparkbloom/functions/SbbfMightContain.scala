package sparkbloom.functions

import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{BinaryExpression, Expression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{BinaryType, BooleanType, DataType, NullType}

import sparkbloom.encoding.ValueHasher
import sparkbloom.sbbf.{InvalidBloomFilterException, Sbbf}

/**
 * `sbbf_might_contain(bitset, expr)`: false only when `expr`'s value is certainly not in the raw bitset
 * (as `sbbf_agg` returns it). Follows Spark's `=`: a floating zero matches either zero, and NaN is never
 * ruled out. NULL when the value or the bitset is NULL. The value must have the type the filter was
 * built from (an INT and a BIGINT of the same number hash differently).
 */
case class SbbfMightContain(bitset: Expression, value: Expression, settings: WriterSettings)
  extends BinaryExpression with CodegenFallback {

  override def left: Expression = bitset
  override def right: Expression = value
  override def prettyName: String = "sbbf_might_contain"
  override def dataType: DataType = BooleanType
  override protected def stringArgs: Iterator[Any] = Iterator(bitset, value)

  override def checkInputDataTypes(): TypeCheckResult = {
    if (bitset.dataType != BinaryType && bitset.dataType != NullType) Checks.wrongType(0, bitset, "\"BINARY\"")
    else {
      val valueCheck = Checks.hashable(1, value, settings)
      if (valueCheck.isFailure) valueCheck
      else if (bitset.foldable && bitset.dataType == BinaryType) Checks.constant("bitset", bitset) {
        case b: Array[Byte] if b.isEmpty || b.length % Sbbf.BytesPerBlock != 0 =>
          Checks.invalid(s"the bitset must be a positive multiple of ${Sbbf.BytesPerBlock} bytes, got ${b.length}")
        case _ => Checks.ok
      }
      else Checks.ok
    }
  }

  @transient private lazy val encoding = settings.encoding(value.dataType).orNull
  // A bitset from a literal or a scalar subquery is the same array on every row: parse it once.
  @transient private var lastBytes: Array[Byte] = _
  @transient private var lastFilter: Sbbf = _

  private def filterOf(bytes: Array[Byte]): Sbbf = {
    if (!(bytes eq lastBytes)) {
      lastFilter = try Sbbf.fromBytes(bytes)
      catch {
        case e: InvalidBloomFilterException =>
          throw new IllegalArgumentException(s"sbbf_might_contain: not an SBBF bitset: ${e.getMessage}", e)
      }
      lastBytes = bytes
    }
    lastFilter
  }

  override protected def nullSafeEval(bits: Any, v: Any): Any = {
    if (value.dataType == NullType) return null
    val hashes = ValueHasher.hashes(v, value.dataType, encoding)
    if (hashes == ValueHasher.Keep) true
    else filterOf(bits.asInstanceOf[Array[Byte]]).mightContainAny(hashes)
  }

  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): SbbfMightContain =
    copy(bitset = newLeft, value = newRight)
}
