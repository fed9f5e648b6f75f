package sparkbloom.scan

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

import sparkbloom.index.{IndexPruner, IndexVersion, PrunedSource, RowGroupSelection, ScanSkipping}
import sparkbloom.predicate.BloomPredicate
import sparkbloom.shims.FileIndexShims

/**
 * Wraps the relation's real [[FileIndex]]: lists what it lists, then drops files whose every row group
 * cannot match according to the bloom indexes, and records which row groups of the kept files may match
 * (in [[RowGroupSelection]], read by [[BloomParquetFileFormat]]). A file not in an index, or whose size or
 * modification time differ from the indexed ones, is kept whole. Everything else is forwarded.
 */
class BloomSkippingFileIndex(
    val session: SparkSession,
    val delegate: FileIndex,
    val indexes: Seq[(IndexVersion, BloomPredicate)],
    val selection: RowGroupSelection,
    val tableName: String,
    val int96Probes: Boolean = true) extends PrunedListing {

  private val log = LoggerFactory.getLogger(getClass)
  val pruner = new IndexPruner(session, indexes, selection, tableName, int96Probes)
  def lastSkipping: Option[ScanSkipping] = pruner.lastSkipping

  def predicateSql: String = pruner.predicateSql
  def indexNames: String = pruner.indexNames

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val listed = delegate.listFiles(partitionFilters, dataFilters)
    try prune(listed)
    catch {
      case NonFatal(e) =>
        log.warn(s"sparkbloom: reading every file of $tableName after an error while pruning: $e")
        listed
    }
  }

  private def prune(listed: Seq[PartitionDirectory]): Seq[PartitionDirectory] =
    BloomSkippingFileIndex.keepListed(listed, pruner.keep)

  override def toString: String =
    s"BloomSkippingFileIndex(indexes=[$indexNames], predicate=[$predicateSql], delegate=$delegate)"
  override def equals(o: Any): Boolean = o match {
    case b: BloomSkippingFileIndex => (b eq this) ||
      (b.delegate == delegate && b.predicateSql == predicateSql && b.indexNames == indexNames)
    case _ => false
  }
  override def hashCode(): Int = delegate.hashCode() * 31 + predicateSql.hashCode
}

/**
 * A file index that prunes another's (`delegate`) listing, and the row groups of the kept files it selected;
 * everything but the listing is the delegate's.
 */
trait PrunedListing extends FileIndexShims with PrunedSource {
  def selection: RowGroupSelection

  override def rootPaths: Seq[Path] = delegate.rootPaths
  override def inputFiles: Array[String] = delegate.inputFiles
  override def refresh(): Unit = delegate.refresh()
  override def sizeInBytes: Long = delegate.sizeInBytes
  override def partitionSchema: StructType = delegate.partitionSchema
  override def metadataOpsTimeNs: Option[Long] = delegate.metadataOpsTimeNs
}

object BloomSkippingFileIndex {
  /** The listing minus the files `keep` (positions in the flattened listing) does not keep. */
  def keepListed(listed: Seq[PartitionDirectory],
                 keep: Array[org.apache.hadoop.fs.FileStatus] => java.util.BitSet): Seq[PartitionDirectory] = {
    val dirs = listed.toArray
    val counts = dirs.map(_.files.size)
    // One pass over the listing (no copies of it: at 10^6 files the listing is Spark's largest object).
    val statuses = new Array[org.apache.hadoop.fs.FileStatus](counts.sum)
    var n = 0
    for (d <- dirs) {
      val it = d.files.iterator
      while (it.hasNext) { statuses(n) = it.next().fileStatus; n += 1 }
    }
    val keptPos = keep(statuses)
    val b = Seq.newBuilder[PartitionDirectory]
    var offset = 0
    for (d <- dirs.indices) {
      val files = dirs(d).files
      if (keptPos.nextSetBit(offset) >= 0 && keptPos.nextSetBit(offset) < offset + counts(d)) {
        val kept = Seq.newBuilder[org.apache.spark.sql.execution.datasources.FileStatusWithMetadata]
        files match {
          case ix: scala.collection.IndexedSeq[_] => // the usual case: only the kept files are visited
            var p = keptPos.nextSetBit(offset)
            while (p >= 0 && p < offset + counts(d)) {
              kept += ix(p - offset).asInstanceOf[org.apache.spark.sql.execution.datasources.FileStatusWithMetadata]
              p = keptPos.nextSetBit(p + 1)
            }
          case _ =>
            val it = files.iterator
            var p = offset
            while (it.hasNext) { val f = it.next(); if (keptPos.get(p)) kept += f; p += 1 }
        }
        b += PartitionDirectory(dirs(d).values, kept.result())
      }
      offset += counts(d)
    }
    b.result()
  }
}
