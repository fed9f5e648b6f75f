package sparkbloom.formats.parquet

import java.util.Locale

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.execution.datasources.{
  CatalogFileIndex, HadoopFsRelation, InMemoryFileIndex, LogicalRelation
}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat

import sparkbloom.BloomConf
import sparkbloom.index.{
  BloomIndexException, DataFile, IndexDiscovery, IndexVersion, KeySetPruner, NotIndexableException, ResolvedTable,
  RowGroupSelection, TableFormat, TableListing, TableRef
}
import sparkbloom.predicate.{BloomPredicate, Conditions}
import sparkbloom.scan.{BloomParquetFileFormat, BloomSkippingFileIndex, KeySetFileIndex, NativeFilters, NativeSpec}
import sparkbloom.shims.FsRelation

/**
 * Spark's V1 Parquet source (catalog tables `USING parquet`, `spark.read.parquet`): exactly Spark's own
 * `ParquetFileFormat`, never a subclass (Delta's brings its own files and deletion rules).
 *
 * For a Filter over such a relation, the relation's file index becomes a [[BloomSkippingFileIndex]] (drops files
 * that cannot match, at planning time) where the table has bloom indexes on referenced columns, and its format a
 * [[BloomParquetFileFormat]], which reads only the row groups that may match (by the index, and by the files' own
 * bloom filters checked safely at read time: [[NativeFilters]], `spark.sparkbloom.nativeFilters.enabled`), with
 * Spark's own reader; parquet-java's own bloom-filter level is off for the scan (it trusts corrupt filters and
 * misses -0.0).
 */
object ParquetFormat extends TableFormat {
  override def name: String = "parquet"

  // ---------------------------------------------------------------------------------------------
  // Resolving a table for indexing

  override def resolve(spark: SparkSession, ref: TableRef, analyzed: () => Option[LogicalPlan],
                       refresh: Boolean): Option[ResolvedTable] = {
    val plan: LogicalPlan = ref match {
      case TableRef.Catalog(name) =>
        val ident = try spark.sessionState.sqlParser.parseTableIdentifier(name)
        catch {
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
        try spark.read.format(classOf[ParquetFileFormat].getName).load(path).queryExecution.analyzed
        catch {
          // Schema inference reads footers first: an encrypted footer fails here, before the builder's check.
          case e: Exception if causes(e).exists(_.getClass.getName.contains("ParquetCrypto")) =>
            throw new BloomIndexException(
              s"Cannot index parquet.`$path`: a file has an encrypted footer and no keys " +
                "are configured; sparkbloom never copies membership of encrypted data into an unencrypted index " +
                "(see docs/encryption.md)", Some(e))
        }
    }
    relationOf(plan) match {
      case Some((rel, catalogLocation)) =>
        val roots = rel.location.rootPaths
        val root = catalogLocation.map(new Path(_)).getOrElse {
          if (roots.size != 1)
            throw new BloomIndexException(
              s"${ref.display} has ${roots.size} root paths; a bloom index needs a single table root")
          roots.head
        }
        val fs = root.getFileSystem(spark.sessionState.newHadoopConf())
        Some(ofRelation(ref, fs.makeQualified(root), rel))
      case None =>
        throw new BloomIndexException(s"${ref.display} is not a Parquet table: bloom indexes support catalog tables " +
          "USING parquet and Parquet paths (parquet.`/path`)")
    }
  }

  private def ofRelation(ref: TableRef, root: Path, relation: HadoopFsRelation): ResolvedTable =
    ResolvedTable(ref, root, relation.dataSchema, relation.partitionSchema.fieldNames.toSeq,
      () =>
        TableListing(relation.location.listFiles(Nil, Nil).flatMap(_.files).map { f =>
          DataFile(f.getPath.toString, f.getLen, f.getModificationTime)
        }))

  /** The Parquet relation under a plain scan (aliases, projections, views allowed). */
  def relationOf(plan: LogicalPlan): Option[(HadoopFsRelation, Option[java.net.URI])] = plan match {
    case FsRelation(_, rel, _, table, _) if isParquet(rel) => Some((rel, table.map(_.location)))
    case SubqueryAlias(_, child) => relationOf(child)
    case Project(_, child) => relationOf(child)
    case v: View => relationOf(v.child)
    case _ => None
  }

  private def isParquet(rel: HadoopFsRelation): Boolean = rel.fileFormat.getClass == classOf[ParquetFileFormat]

  private def causes(e: Throwable): Iterator[Throwable] = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20)

  // ---------------------------------------------------------------------------------------------
  // The table a DataFrame reads

  /** Spark's file sink (`FileSink[path]`): the directory it writes, read through its `_spark_metadata` log. */
  override def writtenBySink(session: SparkSession, description: String): Option[TableFormat.Written] =
    TableFormat.sinkPath(session, "FileSink", description).map(root =>
      TableFormat.Written(root, TableRef.Path(root.toString)))

  override def tableOf(leaf: LogicalPlan): Option[TableRef] = leaf match {
    case FsRelation(_, fs, _, table, _) if isParquet(fs) =>
      fs.location match {
        case _: InMemoryFileIndex | _: CatalogFileIndex => Some(fromRelation(fs, table))
        case other => throw new NotIndexableException(
            s"lists its files with ${other.getClass.getSimpleName}, not a plain directory listing")
      }
    case _ => None
  }

  private def fromRelation(fs: HadoopFsRelation, table: Option[CatalogTable]): TableRef = table match {
    case Some(t) => TableRef.Catalog.of(t.identifier.database.toSeq :+ t.identifier.table)
    case None =>
      fs.location.rootPaths match {
        case Seq(root) => TableRef.Path(root.toString)
        case roots =>
          throw new NotIndexableException(s"reads ${roots.size} paths (${roots.take(3).mkString(", ")}" +
            s"${if (roots.size > 3) ", ..." else ""}); an index covers one table: one directory or one catalog table")
      }
  }

  // ---------------------------------------------------------------------------------------------
  // Pruning a scan

  override def rewrite(session: SparkSession, phase: TableFormat.Phase, filter: Filter,
                       plan: LogicalPlan): Option[LogicalPlan] = filter match {
    case f @ Filter(cond, FsRelation(l, rel, output, table, false))
        if phase == TableFormat.Optimizer &&
          isParquet(rel) && !rel.location.isInstanceOf[BloomSkippingFileIndex] =>
      rewrite(session, f, Conditions.pushable(cond), l, rel, output.map(a => a.exprId -> a.name).toMap,
        table.map(_.location), ParquetGuards.nativeEnabled(session))
    // Already rewritten, and a later rule (e.g. filters inferred from a join) added a comparison with a floating
    // zero or NaN: the guards it needs are added too.
    case f @ Filter(cond, FsRelation(l, rel, _, _, false))
        if phase == TableFormat.Optimizer &&
          rel.fileFormat.isInstanceOf[BloomParquetFileFormat] && ParquetGuards.missing(rel.options, cond).nonEmpty =>
      Some(f.copy(child = l.copy(relation =
          rel.copy(options = rel.options ++ ParquetGuards.missing(rel.options, cond))(rel.sparkSession))))
    case _ => None
  }

  private def rewrite(session: SparkSession, f: Filter, cond: Expression, l: LogicalRelation, rel: HadoopFsRelation,
                      names: Map[ExprId, String], catalogLocation: Option[java.net.URI],
                      native: Boolean): Option[LogicalPlan] = {
    val fromIndexes = indexes(session, cond, rel, names, catalogLocation)
    // With neither indexes nor native filters, the scan is still taken over when its condition names a float or
    // double column: BloomParquetFileFormat reads the files whose writer may leave NaN out of min/max with only the
    // pushed filters that cannot be true for NaN, when some can (NanGuard).
    if (fromIndexes.isEmpty && !native && !ParquetGuards.nanGuardMayApply(session, cond)) return None
    val selection = new RowGroupSelection(BloomConf.rowGroupPruning(session))
    val opts = NativeFilters.options(session, rel.options)
    val location = fromIndexes.map { case (root, used) =>
      new BloomSkippingFileIndex(session, rel.location, used, selection,
        l.catalogTable.map(_.identifier.unquotedString).getOrElse(root.toString),
        int96Probes = opts.int96Probes)
    }
    val nativeSpec = if (!native) None
    else {
      val partitionCols = rel.partitionSchema.fieldNames.map(_.toLowerCase(Locale.ROOT)).toSet
      val dataCol = (id: ExprId) => names.get(id).filterNot(n => partitionCols.contains(n.toLowerCase(Locale.ROOT)))
      val indexedCols =
        fromIndexes.toSeq.flatMap(_._2.flatMap(u => u._1.meta.columns.map(_.name.toLowerCase(Locale.ROOT))))
          .toSet
      Some(NativeSpec(session, cond, dataCol, indexedCols, opts, enabled = true))
    }
    val format = new BloomParquetFileFormat(selection, nativeSpec)
    // parquet-java's bloom level is also off through the relation's options (they reach the scan's Hadoop
    // conf); the changed options also make the new relation compare unequal to the old one.
    val key = BloomParquetFileFormat.NativeBloomFiltering
    val options = rel.options ++ ParquetGuards.safeParquetJavaOptions(cond) ++
      (if (rel.options.get(key).contains("false")) Map("sparkbloom.scan" -> "bloom") else Map.empty)
    val newRel =
      rel.copy(location = location.getOrElse(rel.location), fileFormat = format, options = options)(rel.sparkSession)
    Some(f.copy(child = l.copy(relation = newRel)))
  }

  override def keySetScan(session: SparkSession, leaf: LogicalPlan, attr: Attribute, nullFor: Option[Any],
                          label: String): Option[LogicalPlan] = leaf match {
    case FsRelation(l, rel, output, table, false)
        if (isParquet(rel) || rel.fileFormat.isInstanceOf[BloomParquetFileFormat]) &&
          !rel.location.isInstanceOf[KeySetFileIndex] &&
          !rel.partitionSchema.fieldNames.exists(n => session.sessionState.conf.resolver(n, attr.name)) =>
      val names = output.map(a => a.exprId -> a.name).toMap
      rootOf(rel, table.map(_.location)).flatMap { root =>
        val cols = IndexDiscovery.indexesOf(session, root, attr, names)
        if (cols.isEmpty) None
        else {
          val (format, selection) = rel.fileFormat match {
            case b: BloomParquetFileFormat => (b, b.selection)
            case _ =>
              val sel = new RowGroupSelection(BloomConf.rowGroupPruning(session))
              (new BloomParquetFileFormat(sel, None), sel)
          }
          val opts = NativeFilters.options(session, rel.options)
          val keySet = new KeySetPruner(session, cols, attr.exprId, attr.dataType, nullFor, selection,
            l.catalogTable.map(_.identifier.unquotedString).getOrElse(root.toString), opts.int96Probes, label)
          val newRel = rel.copy(location = new KeySetFileIndex(rel.location, keySet), fileFormat = format)(
            rel.sparkSession)
          Some(l.copy(relation = newRel))
        }
      }
    case _ => None
  }

  /** The table root and the indexes that answer part of `cond`, if any. */
  private def indexes(session: SparkSession, cond: Expression, rel: HadoopFsRelation, names: Map[ExprId, String],
                      catalogLocation: Option[java.net.URI]): Option[(Path, Seq[(IndexVersion, BloomPredicate)])] =
    rootOf(rel, catalogLocation).flatMap(r => IndexDiscovery.indexesAt(session, r, cond, names))

  /** The table root: the catalog location, else the relation's single root path. */
  private def rootOf(rel: HadoopFsRelation, catalogLocation: Option[java.net.URI]): Option[Path] =
    catalogLocation.map(new Path(_)).orElse(rel.location.rootPaths match {
      case Seq(single) => Some(single)
      case _ => None
    })
}
