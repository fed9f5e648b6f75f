package sparkbloom.optimizer

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{ExprId, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetTable
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import sparkbloom.BloomConf
import sparkbloom.index.{IndexStore, IndexVersion}
import sparkbloom.index.sliced.IndexCache
import sparkbloom.scan.{BloomParquetFileFormat, BloomSkippingFileIndex, NativeFilters, NativeSpec, RowGroupSelection}

/**
 * For a Filter over a Parquet file relation:
 *  - where the table has bloom indexes on referenced columns, swaps the relation's file index for a
 *    [[BloomSkippingFileIndex]] (drops files that cannot match, at planning time);
 *  - swaps its format for a [[BloomParquetFileFormat]], which reads only the row groups that may match
 *    (by the index, and by the files' own bloom filters checked safely at read time: [[NativeFilters]],
 *    `spark.sparkbloom.nativeFilters.enabled`), with Spark's own reader, and turns parquet-java's own
 *    bloom-filter level off for the scan (it trusts corrupt filters and misses -0.0).
 * For a Filter over Spark's V2 Parquet table it turns parquet-java's bloom-filter level off through the
 * scan's options (no pruning of its own there yet).
 *
 * Conservative by construction: any exception, an unreadable index or a predicate it does not understand
 * leaves the plan as it was (for indexes) or reads every row group (for native filters).
 */
class BloomSkippingRule(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!BloomConf.enabled(session)) return plan
    IndexCache.setMaxBytes(BloomConf.cacheMaxBytes(session))
    // Native filters prune row groups like Spark's own Parquet pushdown does: not when the user turned it off.
    val native = BloomConf.nativeFilters(session) && session.sessionState.conf.parquetFilterPushDown
    try plan.transformDown {
      case f @ Filter(cond, FsRelation(l, rel, output, table, false))
          if rel.fileFormat.getClass == classOf[ParquetFileFormat] && !rel.location.isInstanceOf[BloomSkippingFileIndex] =>
        rewrite(f, BloomSkippingRule.pushable(cond), l, rel, output.map(a => a.exprId -> a.name).toMap,
          table.map(_.location), native).getOrElse(f)
      // Already rewritten, and a later rule (e.g. filters inferred from a join) added a comparison with a floating
      // zero or NaN: the guards it needs are added too.
      case f @ Filter(cond, FsRelation(l, rel, _, _, false))
          if rel.fileFormat.isInstanceOf[BloomParquetFileFormat] && missing(rel.options, cond).nonEmpty =>
        f.copy(child = l.copy(relation = rel.copy(options = rel.options ++ missing(rel.options, cond))(rel.sparkSession)))
      // Iceberg: the table is swapped for one whose scans drop the files the indexes rule out.
      case f @ Filter(cond, r: DataSourceV2Relation) if sparkbloom.lakehouse.Lakehouse.isIcebergTable(r.table) =>
        sparkbloom.lakehouse.Lakehouse.rewriteIceberg(session, plan, BloomSkippingRule.pushable(cond), r)
          .map(n => f.copy(child = n)).getOrElse(f)
      case f @ Filter(cond, r: DataSourceV2Relation) if native && r.table.getClass == classOf[ParquetTable] &&
          missing(r.options.asCaseSensitiveMap().asScala.toMap, cond).nonEmpty =>
        val opts = new java.util.HashMap[String, String](r.options.asCaseSensitiveMap())
        safeParquetJavaOptions(cond).foreach { case (k, v) => opts.put(k, v) }
        f.copy(child = r.copy(options = new CaseInsensitiveStringMap(opts)))
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: skipping disabled for this query after an error: $e")
        plan
    }
  }

  private def rewrite(f: Filter, cond: Expression, l: LogicalRelation, rel: HadoopFsRelation, names: Map[ExprId, String],
                      catalogLocation: Option[java.net.URI], native: Boolean): Option[LogicalPlan] = {
    val fromIndexes = indexes(cond, l, rel, names, catalogLocation)
    if (fromIndexes.isEmpty && !native) return None
    val selection = new RowGroupSelection(BloomConf.rowGroupPruning(session))
    val opts = NativeFilters.options(session, rel.options)
    val location = fromIndexes.map { case (root, used) =>
      new BloomSkippingFileIndex(session, rel.location, used, selection,
        l.catalogTable.map(_.identifier.unquotedString).getOrElse(root.toString),
        int96Probes = opts.int96Probes)
    }
    val nativeSpec = if (!native) None else {
      val partitionCols = rel.partitionSchema.fieldNames.map(_.toLowerCase(java.util.Locale.ROOT)).toSet
      val dataCol = (id: ExprId) => names.get(id).filterNot(n => partitionCols.contains(n.toLowerCase(java.util.Locale.ROOT)))
      val indexedCols = fromIndexes.toSeq.flatMap(_._2.flatMap(u => u._1.meta.columns.map(_.name.toLowerCase(java.util.Locale.ROOT)))).toSet
      Some(NativeSpec(session, cond, dataCol, indexedCols, opts, enabled = true))
    }
    val format = new BloomParquetFileFormat(selection, nativeSpec)
    // parquet-java's bloom level is also off through the relation's options (they reach the scan's Hadoop
    // conf); the changed options also make the new relation compare unequal to the old one.
    val key = BloomParquetFileFormat.NativeBloomFiltering
    val options = rel.options ++ safeParquetJavaOptions(cond) ++
      (if (rel.options.get(key).contains("false")) Map("sparkbloom.scan" -> "bloom") else Map.empty)
    val newRel = rel.copy(location = location.getOrElse(rel.location), fileFormat = format, options = options)(rel.sparkSession)
    Some(f.copy(child = l.copy(relation = newRel)))
  }

  /**
   * Scan options (they reach the scan's Hadoop conf) that keep parquet-java from dropping matching row groups:
   * its bloom level off (sparkbloom checks the filters itself), and, when the condition compares with a
   * floating-point zero, its dictionary level too: it tests dictionary values with `Double.equals`/`compareTo`,
   * for which -0.0 and 0.0 differ, while in Spark `-0.0 = 0.0` (a file whose chunk holds only -0.0 would lose
   * its rows for `x = 0.0`, `x IN (0.0)`, `x >= 0.0`); and, when it compares with NaN, its statistics and
   * page-index levels: writers following the format (arrow-rs, Arrow C++, DuckDB) leave NaN out of min/max,
   * so `x = NaN` (true for NaN rows in Spark) would drop every row group holding NaNs. Otherwise statistics
   * filtering is safe (parquet-java widens zero bounds on read) and stays on.
   */
  private def safeParquetJavaOptions(cond: Expression): Map[String, String] =
    Map(BloomParquetFileFormat.NativeBloomFiltering -> "false") ++
      (if (BloomSkippingRule.comparesWithFloatingZero(cond)) Map(BloomParquetFileFormat.DictionaryFiltering -> "false") else Map.empty) ++
      (if (BloomSkippingRule.comparesWithNaN(cond))
        Map(BloomParquetFileFormat.StatisticsFiltering -> "false", BloomParquetFileFormat.ColumnIndexFiltering -> "false")
      else Map.empty)

  /** The guard options `cond` needs that `options` lacks. */
  private def missing(options: Map[String, String], cond: Expression): Map[String, String] =
    safeParquetJavaOptions(cond).filter { case (k, v) => !options.get(k).contains(v) }

  /** The table root and the indexes that answer part of `cond`, if any. */
  private def indexes(cond: Expression, l: LogicalRelation, rel: HadoopFsRelation, names: Map[ExprId, String],
                      catalogLocation: Option[java.net.URI]): Option[(Path, Seq[(IndexVersion, BloomPredicate)])] = {
    val root = catalogLocation.map(new Path(_)).orElse(rel.location.rootPaths match {
      case Seq(single) => Some(single)
      case _ => None
    })
    root.flatMap(r => BloomSkippingRule.indexesAt(session, r, cond, names))
  }
}

object BloomSkippingRule extends org.apache.spark.internal.Logging {
  /**
   * The conjuncts of `cond` before its first non-deterministic one (what Spark itself pushes to a scan): pruning
   * on the others would change which rows a non-deterministic conjunct sees.
   */
  def pushable(cond: Expression): Expression = {
    def split(e: Expression): Seq[Expression] = e match {
      case org.apache.spark.sql.catalyst.expressions.And(l, r) => split(l) ++ split(r)
      case other => Seq(other)
    }
    split(cond).takeWhile(_.deterministic).reduceOption(org.apache.spark.sql.catalyst.expressions.And)
      .getOrElse(org.apache.spark.sql.catalyst.expressions.Literal.TrueLiteral)
  }

  /** The indexes stored for the table at `root` that answer part of `cond` (`names`: attribute -> column). */
  def indexesAt(session: SparkSession, root: Path, cond: Expression,
                names: Map[ExprId, String]): Option[(Path, Seq[(IndexVersion, BloomPredicate)])] =
    indexesAt(session, root, cond, (id: ExprId, indexed: Seq[sparkbloom.index.IndexedColumn]) =>
      names.get(id).flatMap(n => indexed.find(_.name == n).orElse(indexed.find(_.name.equalsIgnoreCase(n))).map(_.name)))

  /**
   * The same, with `column` saying which indexed column (if any) an attribute is: Delta and Iceberg tables
   * find them by the files' identity (physical name, field id) rather than by the name in the query.
   */
  def indexesAt(session: SparkSession, root: Path, cond: Expression,
                column: (ExprId, Seq[sparkbloom.index.IndexedColumn]) => Option[String]): Option[(Path, Seq[(IndexVersion, BloomPredicate)])] = {
    val conf = session.sessionState.newHadoopConf()
    val fs = root.getFileSystem(conf)
    val base = IndexStore.indexesDir(fs.makeQualified(root), BloomConf.indexRoot(session))
    if (!fs.exists(base)) None
    else {
      val used: Seq[(IndexVersion, BloomPredicate)] = fs.listStatus(base).toSeq.filter(_.isDirectory).flatMap { st =>
        try {
          IndexStore.latestMeta(fs, st.getPath)._1.flatMap { meta =>
            val lookup = (id: ExprId) => column(id, meta.columns)
            val pred = BloomPredicate.translate(cond, lookup)
            if (pred == BloomPredicate.Unknown) None
            else Some(IndexStore.load(fs, conf, st.getPath, meta) -> pred)
          }
        } catch { case NonFatal(e) => logWarning(s"sparkbloom: ignoring index ${st.getPath}: $e"); None }
      }
      if (used.isEmpty) None else Some(root -> used)
    }
  }

  /** Whether `cond` holds a float or double NaN literal. */
  def comparesWithNaN(cond: Expression): Boolean = cond.exists {
    case org.apache.spark.sql.catalyst.expressions.Literal(v: Double, _) => v.isNaN
    case org.apache.spark.sql.catalyst.expressions.Literal(v: Float, _) => v.isNaN
    case org.apache.spark.sql.catalyst.expressions.InSet(_, set) => set.exists {
      case d: Double => d.isNaN
      case f: Float => f.isNaN
      case _ => false
    }
    case _ => false
  }

  /** Whether `cond` holds a float or double literal equal to zero (either sign). */
  def comparesWithFloatingZero(cond: Expression): Boolean = cond.exists {
    case org.apache.spark.sql.catalyst.expressions.Literal(v: Double, _) => v == 0.0d
    case org.apache.spark.sql.catalyst.expressions.Literal(v: Float, _) => v == 0.0f
    case org.apache.spark.sql.catalyst.expressions.InSet(_, set) => set.exists {
      case d: Double => d == 0.0d
      case f: Float => f == 0.0f
      case _ => false
    }
    case _ => false
  }
}
