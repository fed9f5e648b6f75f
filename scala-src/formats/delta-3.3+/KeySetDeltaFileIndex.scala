package sparkbloom.formats.delta

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.delta.RowIndexFilterType
import org.apache.spark.sql.delta.actions.AddFile
import org.apache.spark.sql.delta.files.TahoeFileIndexWithSnapshotDescriptor

import sparkbloom.index.{IndexPruner, KeySetPruner, KeySource, PrunedSource, RuntimeKeyed}

/**
 * A Delta file index (prepared by Delta's data skipping, a MERGE's or DML's chosen files, or already pruned by
 * literals) whose files are chosen at execution by run-time keys ([[KeySetPruner]]). Per file only, as
 * [[BloomDeltaFileIndex]]: Delta's own `AddFile`s (deletion vectors included) pass through unchanged.
 * Unbound, declined, or on any error: every file `base` matches.
 */
class KeySetDeltaFileIndex(val base: TahoeFileIndexWithSnapshotDescriptor, val keySet: KeySetPruner)
  extends TahoeFileIndexWithSnapshotDescriptor(base.spark, base.deltaLog, base.path, base)
  with PrunedSource with RuntimeKeyed {

  override def pruner: IndexPruner = keySet.pruner
  def bind(src: KeySource): KeySetDeltaFileIndex = new KeySetDeltaFileIndex(base, keySet.bind(src))

  override def matchingFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[AddFile] = {
    val files = base.matchingFiles(partitionFilters, dataFilters)
    if (!keySet.bound) files else BloomDeltaFileIndex.keepFiles(this, files, keySet.tableName, keySet.keep)
  }

  override def rowIndexFilters: Option[Map[String, RowIndexFilterType]] = base.rowIndexFilters
  override def inputFiles: Array[String] = base.inputFiles
  override def refresh(): Unit = base.refresh()
  override def sizeInBytes: Long = base.sizeInBytes

  override def toString: String = s"KeySetDeltaFileIndex(${keySet.label}, $base)"
  override def equals(o: Any): Boolean = o match {
    case k: KeySetDeltaFileIndex => (k eq this) ||
      (k.base == base && k.keySet.label == keySet.label && k.keySet.bound == keySet.bound)
    case _ => false
  }
  override def hashCode(): Int = base.hashCode() * 31 + keySet.label.hashCode
}
