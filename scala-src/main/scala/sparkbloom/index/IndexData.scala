package sparkbloom.index

import com.fasterxml.jackson.databind.annotation.JsonDeserialize
import org.apache.spark.sql.types._

import sparkbloom.hash.ColumnEncoding
import sparkbloom.parquet.FileColumn
import sparkbloom.sbbf.Sbbf

/**
 * The in-memory form of one index version. One [[ColumnFilter]] per (file, row group, column).
 *
 * `filter == null` means "no usable filter" (unknown encoding, unreadable): always might match.
 * `nonNull == 0` means the chunk holds only nulls (or the column is absent from that file).
 */
final case class ColumnFilter(encoding: ColumnEncoding, hasNull: Boolean, nonNull: Long, filter: Sbbf,
                              source: String, ndv: Long)

final case class RowGroupEntry(ordinal: Int, start: Long, end: Long, numRows: Long, columns: Map[String, ColumnFilter])

final case class IndexedFile(path: String, size: Long, mtime: Long, rowGroups: IndexedSeq[RowGroupEntry])

/** A format-1 version as read whole (see [[LegacyIndex]]). */
final case class LoadedIndex(meta: IndexMeta, files: Map[String, IndexedFile], problems: Seq[String])

/**
 * A committed version as planning uses it: its layout, where its segments are (`dir`, or in memory for a
 * format-1 version), and the damage found while loading it (the files it concerns are read).
 */
final case class IndexVersion(meta: IndexMeta, dir: org.apache.hadoop.fs.Path, layout: sliced.Layout,
                              memorySegments: Map[String, Array[Byte]], problems: Seq[String],
                              damaged: Set[String] = Set.empty) { // segments known unusable: their slots might match
  /** Files this version covers, by path: (size, modification time). */
  def covers(path: String, size: Long, mtime: Long): Option[Int] = {
    val f = coveredFile(path, size, mtime); if (f < 0) None else Some(f)
  }

  /** The file number of `path` in this version if its size and modification time are the indexed ones, else -1. */
  def coveredFile(path: String, size: Long, mtime: Long): Int = {
    val f = layout.fileIndex.get(path)
    if (f < 0 || layout.sizes(f) != size || layout.mtimes(f) != mtime) -1 else f
  }
}

/**
 * Metadata of one committed version, stored as the commit file's JSON. Fields added after the first release
 * are options, so older commits still load (`None`: not recorded by the version that wrote them).
 */
final case class IndexMeta(
    name: String,
    table: String,
    tableRoot: String,
    columns: Seq[IndexedColumn],
    fpp: Option[Double], // the index-wide fpp option, if given
    ndv: Option[Long],
    version: Long,
    createdAtMillis: Long,
    dataDir: String,
    files: Long,
    rowGroups: Long,
    entries: Long,
    harvested: Long,
    scanned: Long,
    sizeInBytes: Long,
    falseReadsPerKey: Option[Double] = None, // the index-wide budget option, if given
    fppScope: Option[String] = None, // "file" for Databricks' per-file fpp
    maxBitsPerValue: Option[Double] = None, // the ceiling the build applied
    columnStats: Option[Seq[ColumnStats]] = None,
    formatVersion: Option[Int] = None, // 2: block-sliced (layout.bin + segments); absent: 1
    referencedDirs: Option[Seq[String]] = None, // data directories whose segments this version reads
    tableSnapshot: Option[String] = None, // the table version built from (Delta, Iceberg)
    maintainOnWrite: Option[Boolean] = None, // Some(false): the table's writes do not update this index
    // the length of dataDir/layout.bin, so that it is read without asking the store first (contentAs: Jackson would
    // fill an Option[Long] with an Integer for small numbers, the type argument being erased)
    @JsonDeserialize(contentAs = classOf[java.lang.Long]) layoutBytes: Option[Long] = None) {
  def options: TableOptions =
    TableOptions(fpp, ndv, falseReadsPerKey, fppScope.contains(IndexedColumn.FileScope), maintainOnWrite)
}

/** The index-wide sizing options, as given (each column may override). */
final case class TableOptions(fpp: Option[Double], ndv: Option[Long], falseReadsPerKey: Option[Double],
                              fppPerFile: Boolean, maintainOnWrite: Option[Boolean] = None)

/**
 * An indexed column and how its filters are sized. `fpp` (per row group, or per file when `fppScope` is
 * "file") wins over `falseReadsPerKey`; with neither, the table budget of [[FppPolicy]] applies.
 */
final case class IndexedColumn(name: String, dataType: String, fpp: Option[Double], ndv: Option[Long],
                               falseReadsPerKey: Option[Double] = None, fppScope: Option[String] = None,
                               // Where the column is in the data files when not by `name`: Delta's physical
                               // name under column mapping, Iceberg's field id. Both survive a RENAME COLUMN.
                               fileName: Option[String] = None, fieldId: Option[Int] = None) {
  def sparkType: DataType = DataType.fromDDL(dataType)
  def spec: ColumnSpec = ColumnSpec(name, fpp, ndv, falseReadsPerKey)
  def policy: FppPolicy = fpp match {
    case Some(f) if fppScope.contains(IndexedColumn.FileScope) => FppPolicy.PerFile(f)
    case Some(f) => FppPolicy.PerRowGroup(f)
    case None => FppPolicy.TableBudget(falseReadsPerKey.getOrElse(FppPolicy.DefaultFalseReadsPerKey))
  }
  /** Whether this is the column the files know as `file` (their name) with field id `id`. */
  /** This column as the data files know it (see [[FileColumn]]). */
  def fileColumn: FileColumn = FileColumn(name, fileName, fieldId)

  def sameColumn(file: String, id: Option[Int]): Boolean = fieldId match {
    case Some(f) => id.contains(f)
    case None => fileName.getOrElse(name) == file
  }
}

object IndexedColumn { val FileScope = "file" }

object IndexData {
  /** The Parquet schema of the entries table (one row per file, row group and column). */
  val schema: StructType = StructType(Seq(
      StructField("file_path", StringType, nullable = false),
      StructField("file_size", LongType, nullable = false),
      StructField("file_mtime", LongType, nullable = false),
      StructField("file_entries", IntegerType, nullable = false),
      StructField("row_group", IntegerType, nullable = false),
      StructField("rg_start", LongType, nullable = false),
      StructField("rg_end", LongType, nullable = false),
      StructField("num_rows", LongType, nullable = false),
      StructField("column", StringType, nullable = false),
      StructField("physical_type", StringType, nullable = true),
      StructField("logical_type", StringType, nullable = true),
      StructField("type_length", IntegerType, nullable = false),
      StructField("legacy_calendar", BooleanType, nullable = false),
      StructField("has_null", BooleanType, nullable = false),
      StructField("non_null", LongType, nullable = false),
      StructField("ndv", LongType, nullable = false),
      StructField("source", StringType, nullable = false),
      StructField("bloom_filter", BinaryType, nullable = true),
      StructField("bloom_crc32", LongType, nullable = false)))
}
