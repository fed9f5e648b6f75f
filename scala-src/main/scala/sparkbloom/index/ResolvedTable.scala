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
 */
final case class ResolvedTable(ref: TableRef, root: Path, dataSchema: StructType, partitionColumns: Seq[String],
                               listing: () => TableListing,
                               fileColumn: StructField => (Option[String], Option[Int]) = _ => (None, None)) {
  def display: String = ref.display
  def listFiles(): Seq[DataFile] = listing().files
}

/** The files of a table now, and the table version they are of ("Delta version 7"), when it has versions. */
final case class TableListing(files: Seq[DataFile], snapshot: Option[String] = None)

/** A data file as listed when the build started. */
final case class DataFile(path: String, size: Long, mtime: Long)
