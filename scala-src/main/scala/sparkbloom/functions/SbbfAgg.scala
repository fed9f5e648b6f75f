package sparkbloom.functions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.expressions.aggregate.{ImperativeAggregate, TypedImperativeAggregate}
import org.apache.spark.sql.types.{BinaryType, ByteType, DataType, IntegerType, LongType, NullType, ShortType}

import sparkbloom.encoding.ValueHasher
import sparkbloom.sbbf.Sbbf

/**
 * `sbbf_agg(expr, num_bytes)`: the raw bitset (little-endian words, no header) of a Parquet SBBF of
 * `num_bytes` bytes holding every non-null value of `expr`, hashed exactly as this session's Parquet writer
 * would store it. Partial filters are built per partition and merged by OR, so the result is the same
 * for any partitioning, and byte-identical to the filter parquet-java writes for the same values and size.
 *
 * Each value is inserted as written: -0.0 and 0.0 are different values here (a probe with
 * `sbbf_might_contain` checks both), and NaN is inserted as its bits.
 */
case class SbbfAgg(
    child: Expression,
    numBytesExpr: Expression,
    settings: WriterSettings,
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0) extends TypedImperativeAggregate[Sbbf] {

  override def prettyName: String = "sbbf_agg"
  override def children: Seq[Expression] = Seq(child, numBytesExpr)
  override def nullable: Boolean = false
  override def dataType: DataType = BinaryType
  override protected def stringArgs: Iterator[Any] = Iterator(child, numBytesExpr)

  override def checkInputDataTypes(): TypeCheckResult = {
    val valueCheck = Checks.hashable(0, child, settings)
    if (valueCheck.isFailure) valueCheck
    else if (!Seq(ByteType, ShortType, IntegerType, LongType).contains(numBytesExpr.dataType))
      Checks.wrongType(1, numBytesExpr, "\"INT\"")
    else if (!numBytesExpr.foldable) Checks.notConstant("num_bytes", numBytesExpr, "INT")
    else Checks.constant("num_bytes", numBytesExpr) {
      case null => Checks.invalid("num_bytes must not be NULL")
      case n: Number
          if n.longValue() <= 0 || n.longValue() % Sbbf.BytesPerBlock != 0 || n.longValue() > Sbbf.MaxBytes =>
        Checks.invalid(s"num_bytes must be a positive multiple of ${Sbbf.BytesPerBlock} no larger than " +
          s"${Sbbf.MaxBytes} (128 MiB), got $n")
      case _ => Checks.ok
    }
  }

  @transient private lazy val numBytes: Int = numBytesExpr.eval().asInstanceOf[Number].intValue()
  @transient private lazy val encoding = settings.encoding(child.dataType).orNull

  override def createAggregationBuffer(): Sbbf = Sbbf.empty(numBytes)

  override def update(buffer: Sbbf, input: InternalRow): Sbbf = {
    val v = child.eval(input)
    if (v != null && child.dataType != NullType) {
      val h = ValueHasher.hashWritten(v, child.dataType, encoding)
      // Every value of a type that passed analysis has a written encoding; never drop one silently.
      if (h == null) throw new IllegalStateException(s"sbbf_agg: no $encoding encoding for value $v")
      buffer.insert(h.longValue())
    }
    buffer
  }

  override def merge(buffer: Sbbf, other: Sbbf): Sbbf = buffer.unionInPlace(other)
  override def eval(buffer: Sbbf): Any = buffer.toBytes
  override def serialize(buffer: Sbbf): Array[Byte] = buffer.toBytes
  override def deserialize(bytes: Array[Byte]): Sbbf = Sbbf.fromBytes(bytes)

  override def withNewMutableAggBufferOffset(offset: Int): ImperativeAggregate = copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): ImperativeAggregate = copy(inputAggBufferOffset = offset)
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): SbbfAgg =
    copy(child = newChildren(0), numBytesExpr = newChildren(1))
}
