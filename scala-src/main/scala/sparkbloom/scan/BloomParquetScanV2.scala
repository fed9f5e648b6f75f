package sparkbloom.scan

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.FileSourceOptions
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{And, AttributeReference, Expression}
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory
import org.apache.spark.sql.execution.datasources.v2.parquet.{ParquetPartitionReaderFactory, ParquetScan}
import org.apache.spark.sql.vectorized.ColumnarBatch

import sparkbloom.index.SerializableConf
import sparkbloom.optimizer.BloomPredicate

/**
 * Spark's V2 Parquet scan (`spark.read.parquet` with parquet out of `spark.sql.sources.useV1SourceList`), with
 * the files' own bloom filters checked at read time exactly as [[BloomParquetFileFormat]] does for V1: each
 * file split handed to Spark's own V2 reader factory is first cut to the row groups that may match
 * ([[NativeFilters]]), so Spark's reader (vectorised or not) reads the rest. parquet-java's bloom level is
 * already off for the scan (the rule sets it in the relation's options). A scan with a pushed-down aggregate
 * is never wrapped (it answers from footers, not rows).
 */
class BloomParquetScanV2(val original: ParquetScan, val spec: NativeSpec, minSkipPerExtraRead: Long)
  extends ParquetScan(original.sparkSession, original.hadoopConf, original.fileIndex, original.dataSchema,
    original.readDataSchema, original.readPartitionSchema, original.pushedFilters, original.options,
    original.pushedAggregate, original.partitionFilters, original.dataFilters) {

  override def createReaderFactory(): PartitionReaderFactory = original.createReaderFactory() match {
    case f: ParquetPartitionReaderFactory =>
      val conf = sparkSession.sparkContext.broadcast(new SerializableConf(original.hadoopConf))
      new NativeFilteringReaderFactory(f, spec, conf, minSkipPerExtraRead)
    case other => other
  }

  override def description(): String = super.description() + s", NativeBloomFilters: [${spec.all.sql}]"
  override def equals(o: Any): Boolean = o match {
    case b: BloomParquetScanV2 => b eq this
    case _ => false
  }
  override def hashCode(): Int = System.identityHashCode(this)
}

object BloomParquetScanV2 {
  /** The scan with native filtering, or None when nothing can be decided (no equality on a top-level column). */
  def wrap(s: ParquetScan, caseSensitive: Boolean, int96Probes: Boolean, minSkip: Long,
           sc: org.apache.spark.SparkContext): Option[BloomParquetScanV2] = {
    if (s.isInstanceOf[BloomParquetScanV2] || s.pushedAggregate.isDefined || s.dataFilters.isEmpty) return None
    val partitionCols = s.readPartitionSchema.fieldNames.map(_.toLowerCase(java.util.Locale.ROOT)).toSet
    val names = s.dataFilters.flatMap(_.collect { case a: AttributeReference => a.exprId -> a.name }).toMap
      .filter { case (_, n) => !partitionCols.contains(n.toLowerCase(java.util.Locale.ROOT)) }
    val cond: Expression = s.dataFilters.reduce(And)
    val pred = BloomPredicate.translate(cond, id => names.get(id))
    if (!NativeFilters.prunable(pred)) None
    else Some(new BloomParquetScanV2(s, new NativeSpec(pred, pred, NativeFilters.Options(caseSensitive, int96Probes),
      NativeMetrics(sc)), minSkip))
  }
}

/** Spark's V2 Parquet reader factory, handed each file split cut to the row groups native filters keep. */
final class NativeFilteringReaderFactory(inner: ParquetPartitionReaderFactory, spec: NativeSpec,
                                         conf: Broadcast[SerializableConf], minSkip: Long) extends FilePartitionReaderFactory {
  override def options: FileSourceOptions = inner.options
  override def supportColumnarReads(partition: InputPartition): Boolean = inner.supportColumnarReads(partition)
  override def buildReader(file: PartitionedFile): PartitionReader[InternalRow] = narrowed(file, inner.buildReader)
  override def buildColumnarReader(file: PartitionedFile): PartitionReader[ColumnarBatch] = narrowed(file, inner.buildColumnarReader)

  private def narrowed[T](file: PartitionedFile, build: PartitionedFile => PartitionReader[T]): PartitionReader[T] = {
    val s = file.start; val e = file.start + file.length
    spec.decide(conf.value.value, file, spec.all) match {
      case None => build(file)
      case Some(ranges) =>
        val pieces = BloomParquetFileFormat.pieces(ranges, s, e)
        if (pieces.isEmpty) new ConcatPartitionReader[T](Iterator.empty)
        else if ((pieces.size == 1 && pieces.head == (s -> e)) || BloomParquetFileFormat.readWhole(pieces, s, e, minSkip)) build(file)
        else new ConcatPartitionReader[T](pieces.iterator.map { case (a, b) => () => build(file.copy(start = a, length = b - a)) })
    }
  }
}

/** Reads the readers `parts` opens, one after the other, each closed before the next is opened. */
final class ConcatPartitionReader[T](parts: Iterator[() => PartitionReader[T]]) extends PartitionReader[T] {
  private var current: PartitionReader[T] = null
  override def next(): Boolean = {
    while (true) {
      if (current != null && current.next()) return true
      if (current != null) { current.close(); current = null }
      if (!parts.hasNext) return false
      current = parts.next()()
    }
    false
  }
  override def get(): T = current.get()
  override def close(): Unit = if (current != null) { current.close(); current = null }
}
