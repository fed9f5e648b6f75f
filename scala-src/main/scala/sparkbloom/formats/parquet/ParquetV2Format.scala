package sparkbloom.formats.parquet

import java.util.Locale

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeReference, Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.connector.read.PartitionReaderFactory
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.datasources.v2.{BatchScanExec, DataSourceV2Relation, DataSourceV2ScanRelation}
import org.apache.spark.sql.execution.datasources.v2.parquet.{ParquetScan, ParquetTable}
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import sparkbloom.BloomConf
import sparkbloom.index.{
  IndexDiscovery, IndexVersion, KeySetPruner, KeySource, NotIndexableException, ResolvedTable, RowGroupSelection,
  TableFormat, TableRef
}
import sparkbloom.scan.{
  BloomParquetScanV2, BloomSkippingFileIndex, KeySetFileIndex, NanGuard, NativeFilters, NativeSpec
}

/**
 * Spark's V2 Parquet source (`spark.read.parquet` with parquet out of `spark.sql.sources.useV1SourceList`). Its
 * tables are indexed as Parquet paths (resolved by [[ParquetFormat]]); its scans are pruned at physical planning,
 * where Spark has pushed the filters into the `ParquetScan`: the scan becomes a [[BloomParquetScanV2]], whose
 * splits leave out the files the indexes drop and whose reader factory reads only the row groups that may match.
 */
object ParquetV2Format extends TableFormat {
  override def name: String = "parquet (V2)"

  override def resolve(spark: SparkSession, ref: TableRef, analyzed: () => Option[LogicalPlan],
                       refresh: Boolean): Option[ResolvedTable] = None

  override def tableOf(leaf: LogicalPlan): Option[TableRef] = leaf match {
    case r: DataSourceV2Relation if r.table.getClass == classOf[ParquetTable] =>
      r.table.asInstanceOf[ParquetTable].fileIndex.rootPaths match {
        case Seq(root) => Some(TableRef.Path(root.toString))
        case roots => throw new NotIndexableException(
            s"reads ${roots.size} paths; an index covers one table: one directory or one catalog table")
      }
    case _ => None
  }

  /** parquet-java's bloom level (and, for ±0.0 and NaN, its other levels) turned off through the scan's options. */
  override def rewrite(session: SparkSession, phase: TableFormat.Phase, filter: Filter,
                       plan: LogicalPlan): Option[LogicalPlan] = filter match {
    case f @ Filter(cond, r: DataSourceV2Relation)
        if phase == TableFormat.Optimizer &&
          r.table.getClass == classOf[ParquetTable] && ParquetGuards.nativeEnabled(session) &&
          ParquetGuards.missing(r.options.asCaseSensitiveMap().asScala.toMap, cond).nonEmpty =>
      val opts = new java.util.HashMap[String, String](r.options.asCaseSensitiveMap())
      ParquetGuards.safeParquetJavaOptions(cond).foreach { case (k, v) => opts.put(k, v) }
      Some(f.copy(child = r.copy(options = new CaseInsensitiveStringMap(opts))))
    case _ => None
  }

  override def rewritePhysical(session: SparkSession, scan: SparkPlan): Option[SparkPlan] = scan match {
    case b: BatchScanExec if b.scan.getClass == classOf[ParquetScan] =>
      wrap(session, b, BloomConf.nativeFilters(session)).map(w => b.copy(scan = w))
    case _ => None
  }

  /** The scan unchanged when an index covers `attr` (its run-time filter is planted above it, bound physically). */
  override def keySetScan(session: SparkSession, leaf: LogicalPlan, attr: Attribute, nullFor: Option[Any],
                          label: String): Option[LogicalPlan] = leaf match {
    case r: DataSourceV2Relation if r.table.getClass == classOf[ParquetTable] =>
      keySetTable(session, r.table.asInstanceOf[ParquetTable], attr).map(_ => r)
    case s: DataSourceV2ScanRelation if s.relation.table.getClass == classOf[ParquetTable] =>
      keySetTable(session, s.relation.table.asInstanceOf[ParquetTable], attr).map(_ => s)
    case _ => None
  }

  private def keySetTable(session: SparkSession, t: ParquetTable,
                          attr: Attribute): Option[Seq[(IndexVersion, String)]] =
    if (t.fileIndex.partitionSchema.fieldNames.exists(session.sessionState.conf.resolver(_, attr.name))) None
    else keySetIndexes(session, t.fileIndex.rootPaths, attr)

  private def keySetIndexes(session: SparkSession, roots: Seq[org.apache.hadoop.fs.Path],
                            attr: Attribute): Option[Seq[(IndexVersion, String)]] = roots match {
    case Seq(root) =>
      Some(IndexDiscovery.indexesOf(session, root, attr, Map(attr.exprId -> attr.name))).filter(_.nonEmpty)
    case _ => None
  }

  override def keySetPhysical(session: SparkSession, scan: SparkPlan, attr: Attribute, nullFor: Option[Any],
                              keys: KeySource): Option[SparkPlan] = scan match {
    case b: BatchScanExec if b.scan.getClass == classOf[ParquetScan] =>
      val s = b.scan.asInstanceOf[ParquetScan]
      if (s.pushedAggregate.isDefined) return None
      keySetIndexes(session, s.fileIndex.rootPaths, attr).map { cols =>
        val literal = wrap(session, b, BloomConf.nativeFilters(session))
        val selection = literal.flatMap(_.index).map(_.selection)
          .getOrElse(new RowGroupSelection(BloomConf.rowGroupPruning(session)))
        val opts = NativeFilters.options(session, s.options.asCaseSensitiveMap().asScala.toMap)
        val keySet = new KeySetPruner(session, cols, attr.exprId, attr.dataType, nullFor, selection,
          s.fileIndex.rootPaths.head.toString, opts.int96Probes, keys.label(attr.name), Some(keys))
        val spec = literal.map(_.spec)
          .getOrElse(NativeSpec(session, Literal.TrueLiteral, _ => None, Set.empty, opts, enabled = false))
        val listing = new KeySetFileIndex(literal.flatMap(_.index).getOrElse(s.fileIndex), keySet)
        b.copy(scan = new BloomParquetScanV2(s, spec, BloomConf.minSkipPerExtraRead(session), Some(listing),
          sparkFactory(b)))
      }
    case _ => None
  }

  /**
   * The scan with bloom indexes (when the table at its single root has indexes answering its filters) and native
   * filters at read time, or None when neither can decide anything.
   */
  private def wrap(session: SparkSession, b: BatchScanExec, native: Boolean): Option[BloomParquetScanV2] = {
    val s = b.scan.asInstanceOf[ParquetScan]
    if (s.isInstanceOf[BloomParquetScanV2] || s.pushedAggregate.isDefined || s.dataFilters.isEmpty) return None
    val partitionCols = s.readPartitionSchema.fieldNames.map(_.toLowerCase(Locale.ROOT)).toSet
    val names = s.dataFilters.flatMap(_.collect { case a: AttributeReference => a.exprId -> a.name }).toMap
      .filter { case (_, n) => !partitionCols.contains(n.toLowerCase(Locale.ROOT)) }
    val cond: Expression = s.dataFilters.reduce(And)
    val opts = NativeFilters.options(session, s.options.asCaseSensitiveMap().asScala.toMap)
    val indexes = s.fileIndex.rootPaths match {
      case Seq(root) => IndexDiscovery.indexesAt(session, root, cond, names).map(_._2)
      case _ => None
    }
    val index = indexes.map { used =>
      new BloomSkippingFileIndex(session, s.fileIndex, used, new RowGroupSelection(BloomConf.rowGroupPruning(session)),
        s.fileIndex.rootPaths.head.toString, opts.int96Probes)
    }
    val indexedCols = indexes.toSeq.flatten.flatMap(_._1.meta.columns.map(_.name.toLowerCase(Locale.ROOT))).toSet
    val spec = NativeSpec(session, cond, names.get, indexedCols, opts, enabled = native)
    // Nothing can prune, and no file needs reading with fewer pushed filters (NanGuard): Spark's scan as it is.
    if (spec.metrics == null && index.isEmpty &&
      !NanGuard.needed(session, s.pushedFilters.toSeq, s.hadoopConf)) None
    else Some(new BloomParquetScanV2(s, spec, BloomConf.minSkipPerExtraRead(session), index, sparkFactory(b)))
  }

  /**
   * Spark's reader factory of the scan `b` replaces: Spark's planner has usually built it already (asking whether the
   * scan is columnar builds it, and broadcasts the Hadoop conf), so the rewritten scan reuses it rather than have
   * the same scan build (and broadcast) a second one.
   */
  private def sparkFactory(b: BatchScanExec): () => PartitionReaderFactory = () => b.readerFactory
}
