package sparkbloom.index

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * A table resolved for indexing: where its indexes live (`root`), its columns, its files right now, and where
 * each column is in those files, as a [[TableFormat]] resolves it (Spark's file relation for plain Parquet; a
 * snapshot's files, column mapping and field ids for Delta and Iceberg).
 *
 * @param fileColumn where a column of `dataSchema` is in the data files when not by its name: Delta's
 *                   physical name, Iceberg's field id (see [[IndexedColumn]])
 * @param changesSince the data files added and removed since a version of the table (a [[TableListing.snapshot]]),
 *                     read from the table's own log instead of listing it whole; None when the format cannot tell
 *                     exactly (an unknown or expired version, a schema change, too many commits to read)
 */
final case class ResolvedTable(ref: TableRef, root: Path, dataSchema: StructType, partitionColumns: Seq[String],
                               listing: () => TableListing,
                               fileColumn: StructField => (Option[String], Option[Int]) = _ => (None, None),
                               changesSince: String => Option[TableChanges] = _ => None) {
  def display: String = ref.display
  def listFiles(): Seq[DataFile] = listing().files
}

/** The files of a table now, and the table version they are of ("Delta version 7"), when it has versions. */
final case class TableListing(files: Seq[DataFile], snapshot: Option[String] = None)

/** A data file as listed when the build started. */
final case class DataFile(path: String, size: Long, mtime: Long)

/**
 * What the commits after a table version changed, in sum: the data files they added and are still there (a file
 * removed and added again, as Delta does when it attaches a deletion vector, is in both), the paths they removed,
 * and the version now (a [[TableListing.snapshot]]).
 */
final case class TableChanges(added: Seq[DataFile], removed: Set[String], snapshot: String)

object TableChanges {
  /**
   * The sum of commits read oldest first, each as (added, removed paths): a file added and removed later is not
   * added; one removed and added later is in both.
   */
  def of(commits: Iterator[(Seq[DataFile], Seq[String])], snapshot: String): TableChanges = {
    val added = scala.collection.mutable.LinkedHashMap.empty[String, DataFile]
    val removed = scala.collection.mutable.Set.empty[String]
    commits.foreach { case (adds, removes) =>
      removes.foreach { p => added.remove(p); removed += p }
      adds.foreach(f => added(f.path) = f)
    }
    TableChanges(added.values.toSeq, removed.toSet, snapshot)
  }
}
