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
    val dirFiles = dirs.map(_.files.toArray)
    val statuses = {
      val a = new Array[org.apache.hadoop.fs.FileStatus](dirFiles.iterator.map(_.length).sum)
      var n = 0
      for (files <- dirFiles) { var j = 0; while (j < files.length) { a(n) = files(j).fileStatus; n += 1; j += 1 } }
      a
    }
    val keptPos = keep(statuses)
    val b = Seq.newBuilder[PartitionDirectory]
    var offset = 0
    for (d <- dirs.indices) {
      val files = dirFiles(d)
      val kept = Seq.newBuilder[org.apache.spark.sql.execution.datasources.FileStatusWithMetadata]
      var p = keptPos.nextSetBit(offset)
      while (p >= 0 && p < offset + files.length) { kept += files(p - offset); p = keptPos.nextSetBit(p + 1) }
      val k = kept.result()
      if (k.nonEmpty) b += PartitionDirectory(dirs(d).values, k)
      offset += files.length
    }
    b.result()
  }
}
