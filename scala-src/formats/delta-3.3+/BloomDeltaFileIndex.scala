package sparkbloom.formats.delta

import scala.util.control.NonFatal

import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.delta.RowIndexFilterType
import org.apache.spark.sql.delta.actions.AddFile
import org.apache.spark.sql.delta.files.{TahoeFileIndex, TahoeFileIndexWithSnapshotDescriptor}

import sparkbloom.index.{IndexPruner, PrunedSource}

/**
 * A Delta file index (a query's, prepared by Delta's data skipping, or the files a DELETE, UPDATE or MERGE chose
 * before looking for the rows its condition matches), minus the files bloom indexes rule out for a literal
 * condition. A Delta file index itself (Delta's deletion-vector strategy only applies to one): the files it returns
 * are Delta's own `AddFile`s, deletion vectors included, so deleted rows stay deleted; the format stays
 * `DeltaParquetFileFormat`.
 */
class BloomDeltaFileIndex(val base: TahoeFileIndexWithSnapshotDescriptor, val pruner: IndexPruner)
  extends TahoeFileIndexWithSnapshotDescriptor(base.spark, base.deltaLog, base.path, base) with PrunedSource {

  override def matchingFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[AddFile] = {
    BloomDeltaFileIndex.keepFiles(this, base.matchingFiles(partitionFilters, dataFilters), pruner.tableName,
      statuses => Some(pruner.keep(statuses)))
  }

  override def rowIndexFilters: Option[Map[String, RowIndexFilterType]] = base.rowIndexFilters
  override def inputFiles: Array[String] = base.inputFiles
  override def refresh(): Unit = base.refresh()
  override def sizeInBytes: Long = base.sizeInBytes

  override def toString: String =
    s"BloomDeltaFileIndex(indexes=[${pruner.indexNames}], predicate=[${pruner.predicateSql}], $base)"
  override def equals(o: Any): Boolean = o match {
    case b: BloomDeltaFileIndex => (b eq this) ||
      (b.base == base && b.pruner.predicateSql == pruner.predicateSql &&
        b.pruner.indexNames == pruner.indexNames)
    case _ => false
  }
  override def hashCode(): Int = base.hashCode() * 31 + pruner.predicateSql.hashCode
}

object BloomDeltaFileIndex {
  /**
   * The `files` of Delta file index `index` that `keep` keeps (positions; None: all of them), decided on their
   * path, size and modification time as Delta's log records them; every file after any error.
   */
  def keepFiles(index: TahoeFileIndex, files: Seq[AddFile], table: String,
                keep: Array[FileStatus] => Option[java.util.BitSet]): Seq[AddFile] =
    try {
      val statuses =
        files.map(a => new FileStatus(a.size, false, 0, 0L, a.modificationTime, index.absolutePath(a.path))).toArray
      keep(statuses) match {
        case Some(kept) => files.indices.filter(kept.get).map(files)
        case None => files
      }
    } catch {
      case NonFatal(e) =>
        org.slf4j.LoggerFactory.getLogger(getClass).warn(
          s"sparkbloom: reading every file Delta kept for $table after an error while pruning: $e")
        files
    }
}
