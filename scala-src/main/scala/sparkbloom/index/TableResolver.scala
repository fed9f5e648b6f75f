package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * A table resolved for indexing: where its indexes live (`root`), its columns, its files right now, and where
 * each column is in those files. Plain Parquet tables come from Spark's file relation; Delta and Iceberg
 * tables from `sparkbloom.lakehouse` (their snapshot's files, column mapping and field ids).
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

object ResolvedTable {
  def ofRelation(ref: TableRef, root: Path, relation: HadoopFsRelation): ResolvedTable =
    ResolvedTable(ref, root, relation.dataSchema, relation.partitionSchema.fieldNames.toSeq,
      () => TableListing(relation.location.listFiles(Nil, Nil).flatMap(_.files).map { f =>
        DataFile(f.getPath.toString, f.getLen, f.getModificationTime)
      }))
}

object TableResolver {
  def resolve(spark: SparkSession, ref: TableRef, refresh: Boolean = false): ResolvedTable =
    sparkbloom.lakehouse.Lakehouse.resolve(spark, ref).getOrElse(resolveParquet(spark, ref, refresh))

  private def resolveParquet(spark: SparkSession, ref: TableRef, refresh: Boolean): ResolvedTable = {
    val plan: LogicalPlan = ref match {
      case TableRef.Catalog(name) =>
        val ident = try spark.sessionState.sqlParser.parseTableIdentifier(name) catch {
          case NonFatal(_) => throw new BloomIndexException(s"'$name' is not a valid table name")
        }
        if (!spark.sessionState.catalog.tableExists(ident))
          throw new BloomIndexException(s"Table or view not found: $name")
        if (refresh) spark.catalog.refreshTable(name)
        spark.table(name).queryExecution.analyzed
      case TableRef.Path(path) =>
        val p = new Path(path)
        val fs = p.getFileSystem(spark.sessionState.newHadoopConf())
        if (!fs.exists(p)) throw new BloomIndexException(s"Path does not exist: $path")
        // Spark's V1 Parquet source by class name: the index reads footers and lists files through a
        // HadoopFsRelation whatever spark.sql.sources.useV1SourceList says (queries may use the V2 scan).
        try spark.read.format(classOf[ParquetFileFormat].getName).load(path).queryExecution.analyzed catch {
          // Schema inference reads footers first: an encrypted footer fails here, before the builder's check.
          case e: Exception if causes(e).exists(_.getClass.getName.contains("ParquetCrypto")) =>
            throw new BloomIndexException(s"Cannot index parquet.`$path`: a file has an encrypted footer and no keys " +
              "are configured; sparkbloom never copies membership of encrypted data into an unencrypted index " +
              "(see docs/encryption.md)", Some(e))
        }
    }
    relationOf(plan) match {
      case Some((rel, catalogLocation)) =>
        val roots = rel.location.rootPaths
        val root = catalogLocation.map(new Path(_)).getOrElse {
          if (roots.size != 1) throw new BloomIndexException(s"${ref.display} has ${roots.size} root paths; a bloom index needs a single table root")
          roots.head
        }
        val fs = root.getFileSystem(spark.sessionState.newHadoopConf())
        ResolvedTable.ofRelation(ref, fs.makeQualified(root), rel)
      case None =>
        throw new BloomIndexException(s"${ref.display} is not a Parquet table: bloom indexes support catalog tables " +
          "USING parquet and Parquet paths (parquet.`/path`)")
    }
  }

  /** The Parquet relation under a plain scan (aliases, projections, views allowed). */
  def relationOf(plan: LogicalPlan): Option[(HadoopFsRelation, Option[java.net.URI])] = plan match {
    // Exactly Spark's Parquet format: a subclass (Delta's) brings its own files and deletion rules.
    case sparkbloom.optimizer.FsRelation(_, rel, _, table, _) if rel.fileFormat.getClass == classOf[ParquetFileFormat] =>
      Some((rel, table.map(_.location)))
    case SubqueryAlias(_, child) => relationOf(child)
    case Project(_, child) => relationOf(child)
    case v: View => relationOf(v.child)
    case _ => None
  }

  private def causes(e: Throwable): Iterator[Throwable] = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20)
}
