package sparkbloom.scan

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.slf4j.LoggerFactory

import sparkbloom.index.{IndexPruner, KeySetPruner, KeySource, RowGroupSelection, RuntimeKeyed}

/**
 * A V1 Parquet relation's file index whose files are chosen at execution by run-time keys ([[KeySetPruner]]):
 * lists what `delegate` lists (which may itself prune by literals), then keeps the files whose row groups may
 * hold one of the keys, and records those row groups in the pruner's selection (read by
 * [[BloomParquetFileFormat]]). Unbound, declined, or on any error: the whole listing.
 */
class KeySetFileIndex(val delegate: FileIndex, val keySet: KeySetPruner)
  extends PrunedListing with RuntimeKeyed {

  private val log = LoggerFactory.getLogger(getClass)

  override def pruner: IndexPruner = keySet.pruner
  override def selection: RowGroupSelection = keySet.selection
  def bind(src: KeySource): KeySetFileIndex = new KeySetFileIndex(delegate, keySet.bind(src))

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val listed = delegate.listFiles(partitionFilters, dataFilters)
    if (!keySet.bound) return listed
    try {
      var whole = false
      val kept = BloomSkippingFileIndex.keepListed(listed,
        statuses =>
          keySet.keep(statuses).getOrElse { whole = true; new java.util.BitSet(0) })
      if (whole) listed else kept
    } catch {
      case NonFatal(e) =>
        log.warn(s"sparkbloom: reading every file of ${keySet.tableName} after an error in run-time pruning: $e")
        listed
    }
  }

  override def toString: String = s"KeySetFileIndex(${keySet.label}, delegate=$delegate)"
  override def equals(o: Any): Boolean = o match {
    case k: KeySetFileIndex => (k eq this) ||
      (k.delegate == delegate && k.keySet.label == keySet.label && k.keySet.bound == keySet.bound)
    case _ => false
  }
  override def hashCode(): Int = delegate.hashCode() * 31 + keySet.label.hashCode
}
