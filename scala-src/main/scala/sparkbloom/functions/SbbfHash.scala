package sparkbloom.functions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, LongType, NullType}

import sparkbloom.encoding.ValueHasher

/**
 * `sbbf_hash(expr)`: xxHash64 (seed 0, as a signed BIGINT) of `expr`'s Parquet PLAIN encoding in the physical
 * type this session's writer uses for its type: the hash a Parquet bloom filter holds for the value.
 * NaN and -0.0 hash their own bits; NULL gives NULL.
 */
case class SbbfHash(child: Expression, settings: WriterSettings) extends UnaryExpression with CodegenFallback {
  override def prettyName: String = "sbbf_hash"
  override def dataType: DataType = LongType
  override def nullable: Boolean = true
  override protected def stringArgs: Iterator[Any] = Iterator(child)

  override def checkInputDataTypes(): TypeCheckResult = Checks.hashable(0, child, settings)

  @transient private lazy val encoding = settings.encoding(child.dataType).orNull

  override def eval(input: InternalRow): Any = {
    val v = child.eval(input)
    if (v == null || child.dataType == NullType) null
    else ValueHasher.hashWritten(v, child.dataType, encoding) // a boxed Long, or null
  }

  override protected def withNewChildInternal(newChild: Expression): SbbfHash = copy(child = newChild)
}
