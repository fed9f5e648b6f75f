package sparkbloom.api

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.execution.datasources.{CatalogFileIndex, HadoopFsRelation, InMemoryFileIndex, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

import sparkbloom.index.{BloomIndexException, TableRef}

/**
 * Which table a DataFrame reads, for `df.bloomFilterIndex(...)`: only a plain scan of Parquet files, so
 * that the index describes exactly the files the DataFrame's rows come from. Column selections, filters
 * and views are looked through; anything that combines or computes rows is refused.
 */
object DataFrameTable {
  val Supported: String =
    "a DataFrame that reads Parquet files directly: spark.read.parquet(path) of one directory or file, " +
      "or spark.table(name) of a Parquet table, optionally with select / where / filter on top"

  def of(df: DataFrame): TableRef = of(df.queryExecution.analyzed)

  def of(plan: LogicalPlan): TableRef = plan match {
    case p: Project => of(p.child)
    case f: Filter => of(f.child)
    case s: SubqueryAlias => of(s.child)
    case v: View => of(v.child)
    case l: LogicalRelation => l.relation match {
      // Exactly Spark's own Parquet format: subclasses (Delta's, for one) add files or deletion rules
      // that an index over the raw files would not see.
      case fs: HadoopFsRelation if fs.fileFormat.getClass == classOf[ParquetFileFormat] =>
        fs.location match {
          case _: InMemoryFileIndex | _: CatalogFileIndex => fromRelation(fs, l.catalogTable)
          case other => unsupported(s"lists its files with ${other.getClass.getSimpleName}, not a plain directory listing")
        }
      case fs: HadoopFsRelation => unsupported(s"reads ${fs.fileFormat} files, not Parquet")
      case other => unsupported(s"reads from ${other.getClass.getSimpleName}, not Parquet files")
    }
    case r: DataSourceV2Relation =>
      unsupported(s"reads ${r.table.name()} through a DataSource V2 connector; only the built-in (V1) Parquet " +
        "source is supported (spark.sql.sources.useV1SourceList must include parquet)")
    case other => unsupported(s"is not a plain scan: its plan contains ${other.nodeName}")
  }

  private def fromRelation(fs: HadoopFsRelation, table: Option[CatalogTable]): TableRef = table match {
    case Some(t) => TableRef.Catalog(tableName(t))
    case None =>
      fs.location.rootPaths match {
        case Seq(root) => TableRef.Path(root.toString)
        case roots =>
          unsupported(s"reads ${roots.size} paths (${roots.take(3).mkString(", ")}${if (roots.size > 3) ", ..." else ""}); " +
            "an index covers one table: one directory or one catalog table")
      }
  }

  /** `db.table`, each part back-quoted only when it needs to be. */
  private def tableName(t: CatalogTable): String =
    (t.identifier.database.toSeq :+ t.identifier.table).map(quoteIfNeeded).mkString(".")

  private def quoteIfNeeded(part: String): String =
    if (part.matches("[A-Za-z_][A-Za-z0-9_]*")) part else "`" + part.replace("`", "``") + "`"

  private def unsupported(reason: String): Nothing =
    throw new BloomIndexException(s"A bloom index can only be built over $Supported. This DataFrame $reason.")
}
