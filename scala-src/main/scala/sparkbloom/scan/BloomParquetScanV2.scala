package sparkbloom.scan

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.FileSourceOptions
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.execution.datasources.{FilePartition, PartitionedFile}
import org.apache.spark.sql.execution.datasources.v2.FilePartitionReaderFactory
import org.apache.spark.sql.execution.datasources.v2.parquet.{ParquetPartitionReaderFactory, ParquetScan}
import org.apache.spark.sql.vectorized.ColumnarBatch

import sparkbloom.index.{ConfBroadcast, RowGroupSelection}
import sparkbloom.predicate.Conditions

/**
 * Spark's V2 Parquet scan (`spark.read.parquet` with parquet out of `spark.sql.sources.useV1SourceList`), with
 * the files' own bloom filters checked at read time exactly as [[BloomParquetFileFormat]] does for V1: each
 * file split handed to Spark's own V2 reader factory is first cut to the row groups that may match
 * ([[NativeFilters]]), so Spark's reader (vectorised or not) reads the rest. parquet-java's bloom level is
 * already off for the scan (the rule sets it in the relation's options). When a pushed filter can be true for a
 * float or double NaN, files whose writer may leave NaN out of min/max are read by a second factory handed only
 * the filters that cannot be true for NaN ([[NanGuard]]). A scan with a pushed-down aggregate
 * is never wrapped (it answers from footers, not rows).
 */
class BloomParquetScanV2(val original: ParquetScan, val spec: NativeSpec, minSkipPerExtraRead: Long,
                         val index: Option[PrunedListing] = None,
                         sparkFactory: () => PartitionReaderFactory = null)
  extends ParquetScan(original.sparkSession, original.hadoopConf, original.fileIndex, original.dataSchema,
    original.readDataSchema, original.readPartitionSchema, original.pushedFilters, original.options,
    original.pushedAggregate, original.partitionFilters, original.dataFilters) {

  private def selection: RowGroupSelection = index.map(_.selection).getOrElse(BloomParquetScanV2.NoSelection)

  /**
   * Spark's own splits of the files the bloom indexes keep: the listing is pruned by a [[BloomSkippingFileIndex]]
   * over the scan's own file index (same listing, partition pruning included), and the splits of dropped files
   * are removed; row groups are narrowed at read time from the same decision.
   */
  override def planInputPartitions(): Array[InputPartition] = {
    val parts = super.planInputPartitions()
    index match {
      case None => parts
      case Some(ix) =>
        // Only files the index dropped are removed (a split whose path is not recognised is kept).
        def paths(ds: Seq[org.apache.spark.sql.execution.datasources.PartitionDirectory]): Set[String] =
          ds.iterator.flatMap(_.files.iterator.map(_.getPath.toString)).toSet
        val kept = paths(ix.listFiles(partitionFilters, dataFilters))
        val dropped = paths(fileIndex.listFiles(partitionFilters, dataFilters)) -- kept
        if (dropped.isEmpty) parts
        else parts.iterator.map {
          case f: FilePartition => f.files.filterNot(pf => dropped.contains(pf.toPath.toString))
          case other => return parts // not Spark's file splits: read everything
        }.filter(_.nonEmpty).zipWithIndex.map { case (files, i) => FilePartition(i, files): InputPartition }.toArray
    }
  }

  /** Spark's factory for the original scan: the one its planner built when it was handed, else a new one. */
  private def originalFactory(): PartitionReaderFactory =
    if (sparkFactory != null) sparkFactory() else original.createReaderFactory()

  override def createReaderFactory(): PartitionReaderFactory = originalFactory() match {
    case f: ParquetPartitionReaderFactory =>
      // Files whose writer may leave NaN out of min/max are read by a copy of Spark's factory handed only the
      // filters that cannot be true for NaN ([[NanGuard]]); it shares the original's broadcast conf.
      val nanSafe =
        if (NanGuard.needed(sparkSession, original.pushedFilters.toSeq, original.hadoopConf))
          Some(f.copy(filters = Conditions.nanSafe(f.filters.toSeq).toArray))
        else None
      // The Hadoop conf on the executors: Spark's own broadcast when only NanGuard needs one (to read created_by).
      val conf: () => Configuration =
        if (index.isEmpty && !NativeFilters.prunable(spec.all) && !NativeFilters.prunable(spec.covered)) {
          val b = f.broadcastedConf
          () => b.value.value
        } else {
          val b = ConfBroadcast.of(sparkSession.sparkContext, original.hadoopConf)
          () => b.value.value
        }
      new NativeFilteringReaderFactory(f, spec, conf, minSkipPerExtraRead, selection, nanSafe)
    case other => other
  }

  override def description(): String = super.description() +
    index.map(i => s", BloomIndexes: [${i.pruner.indexNames}] [${i.pruner.predicateSql}]").getOrElse("") +
    (if (NativeFilters.prunable(spec.all)) s", NativeBloomFilters: [${spec.all.sql}]" else "")
  override def equals(o: Any): Boolean = o match {
    case b: BloomParquetScanV2 => b eq this
    case _ => false
  }
  override def hashCode(): Int = System.identityHashCode(this)
}

object BloomParquetScanV2 {
  private val NoSelection = new RowGroupSelection(false)
}

/** Spark's V2 Parquet reader factory, handed each file split cut to the row groups native filters keep. */
final class NativeFilteringReaderFactory(inner: ParquetPartitionReaderFactory, spec: NativeSpec,
                                         conf: () => Configuration, minSkip: Long,
                                         selection: RowGroupSelection,
                                         nanSafe: Option[ParquetPartitionReaderFactory] = None)
  extends FilePartitionReaderFactory {
  override def options: FileSourceOptions = inner.options
  override def supportColumnarReads(partition: InputPartition): Boolean = inner.supportColumnarReads(partition)
  override def buildReader(file: PartitionedFile): PartitionReader[InternalRow] =
    narrowed(file, factoryFor(file).buildReader)
  override def buildColumnarReader(file: PartitionedFile): PartitionReader[ColumnarBatch] =
    narrowed(file, factoryFor(file).buildColumnarReader)

  /** Spark's factory, or for a file whose writer may leave NaN out of min/max the one with NaN-safe filters only. */
  private def factoryFor(file: PartitionedFile): ParquetPartitionReaderFactory = nanSafe match {
    case Some(f) if !NanGuard.statisticsSafe(conf(), file) => f
    case _ => inner
  }

  private def narrowed[T](file: PartitionedFile, build: PartitionedFile => PartitionReader[T]): PartitionReader[T] =
    BloomParquetFileFormat.splitsToRead(file, selection, Some(spec), conf(), minSkip) match {
      case None => build(file)
      case Some(parts) => new ConcatPartitionReader[T](parts.iterator.map(p => () => build(p)))
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
