package sparkbloom.index

import org.apache.spark.sql.AnalysisException

/** A table an index is defined on: a catalog table (`db.t`) or a Parquet path (parquet.`/data/t`). */
sealed trait TableRef { def display: String }
object TableRef {
  final case class Catalog(name: String) extends TableRef { def display: String = name }
  object Catalog {
    /** The multi-part name `parts`, each part back-quoted only when it needs to be (`db.table`, `cat.db.table`). */
    def of(parts: Seq[String]): Catalog = Catalog(parts.map(quoteIfNeeded).mkString("."))

    private def quoteIfNeeded(part: String): String =
      if (part.matches("[A-Za-z_][A-Za-z0-9_]*")) part else "`" + part.replace("`", "``") + "`"
  }
  final case class Path(path: String) extends TableRef { def display: String = s"parquet.`$path`" }

  private val PathDisplay = """(?s)parquet\.`(.*)`""".r
  /** The table whose [[TableRef.display]] is `display` (the name an index records). */
  def ofDisplay(display: String): TableRef = display match {
    case PathDisplay(p) => Path(p)
    case other => Catalog(other)
  }
}

/** One indexed column and its per-column options. */
final case class ColumnSpec(name: String, fpp: Option[Double] = None, ndv: Option[Long] = None,
                            falseReadsPerKey: Option[Double] = None)

/** What SHOW / DESCRIBE BLOOM INDEX and the Python `describe()` report. */
final case class IndexDescription(
    name: String,
    table: String,
    location: String,
    columns: Seq[ColumnSpec],
    fpp: Option[Double],
    ndv: Option[Long],
    version: Long,
    createdAtMillis: Long,
    filesCovered: Long,
    rowGroupsCovered: Long,
    filtersHarvested: Long,
    filtersScanned: Long,
    sizeInBytes: Long,
    filesInTable: Long,
    filesNotCovered: Long, // new or changed since the version was built: always read
    filesDeleted: Long, // in the index but gone from the table: ignored
    problems: Seq[String], // damage found while reading the index (those files are read)
    falseReadsPerKey: Option[Double] = None,
    policies: Seq[String] = Nil, // per column, how its filters are sized (FppPolicy.describe)
    maxBitsPerValue: Option[Double] = None,
    columnStats: Seq[ColumnStats] = Nil, // per column, for the version as stored (empty for older versions)
    usage: SkippingLog.Usage = SkippingLog.Usage(0, 0, 0, 0, 0), // lookups planned by this driver
    snapshotCovered: Option[String] = None, // the table version the index was built from (Delta, Iceberg)
    snapshotNow: Option[String] = None, // the table's current version
    levels: String = "", // the layout's levels (Layout.describeLevels)
    maintainOnWrite: Boolean = true, // the table's writes update this index (index option maintain_on_write)
    versions: Int = 1, // committed versions kept (VACUUM BLOOM INDEX removes old ones)
    segments: Int = 0, // stored segment files the newest version reads (filters and summaries)
    commitSafety: String = "", // how versions are committed on the index's store (CommitStore.describe)
    // budgeted columns whose harvested filters read more than twice their budget (IndexManager.harvestedOverBudget)
    harvestedOverBudget: Seq[String] = Nil
)

/** A user error about a bloom index: bad DDL, unknown index or column, unsupported type, bad option. */
class BloomIndexException(message: String, cause: Option[Throwable] = None)
  extends AnalysisException(message, None, None, cause)

/**
 * A DataFrame whose scan a table format recognises but cannot index; `reason` completes "This DataFrame ..."
 * (`df.bloomFilterIndex` says which DataFrames can be indexed).
 */
class NotIndexableException(val reason: String) extends BloomIndexException(s"This DataFrame $reason.")
