package sparkbloom.formats.delta

import java.util.Collections

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.{ResolvedTable => ResolvedCatalogTable}
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan, Project, SubqueryAlias, V2WriteCommand, View}
import org.apache.spark.sql.delta.{DeltaColumnMapping, DeltaLog}
import org.apache.spark.sql.delta.actions.{AddFile, Metadata, RemoveFile}
import org.apache.spark.sql.delta.catalog.DeltaTableV2
import org.apache.spark.sql.delta.commands.{
  DeleteCommand, MergeIntoCommand, OptimizeTableCommand, RestoreTableCommand, UpdateCommand, WriteIntoDelta
}
import org.apache.spark.sql.delta.files.{TahoeFileIndexWithSnapshotDescriptor, TahoeLogFileIndex}
import org.apache.spark.sql.delta.sources.DeltaDataSource
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation, SaveIntoDataSourceCommand}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

import sparkbloom.index.{
  DataFile, IndexDiscovery, IndexPruner, IndexedColumn, KeySetPruner, ResolvedTable, RowGroupSelection, TableChanges,
  TableFormat, TableListing, TableRef
}
import sparkbloom.predicate.Conditions
import sparkbloom.scan.NativeFilters
import sparkbloom.shims.FsRelation

/**
 * Delta Lake tables (delta-spark). An index covers the data files of the table's current snapshot, keyed by
 * absolute path, size and modification time as Delta's log records them (the same figures Delta's scan
 * lists), and its columns by their **physical** names: under column mapping the files hold `col-<uuid>`
 * names, which RENAME COLUMN leaves alone, so a renamed column keeps its index.
 *
 * Scans are pruned after Delta's own data skipping: Delta's `PrepareDeltaScan` (a pre-CBO rule) swaps the
 * table's log file index for a `PreparedDeltaFileIndex` holding the files its min/max statistics keep, and
 * sparkbloom's pre-CBO rule, injected after it, wraps that index in a [[BloomDeltaFileIndex]]. Pre-CBO rules run
 * in the order the extensions were listed, so `spark.sql.extensions` must list Delta's extension first; listed
 * the other way round no prepared index is found and nothing is pruned (never a wrong answer). DELETE, UPDATE and
 * MERGE look for the rows their condition matches over a batch index of the files Delta's skipping chose, which is
 * pruned the same way: only the files that may hold a matching row are read and rewritten.
 *
 * Pruning is per file only. Row groups are not cut: with deletion vectors Delta counts row indexes from
 * the start of what it reads, so a cut split would apply the vector to the wrong rows.
 */
object DeltaFormat extends TableFormat {
  private val log = LoggerFactory.getLogger(getClass)
  private val PreparedIndex = "org.apache.spark.sql.delta.stats.PreparedDeltaFileIndex"

  override def name: String = "delta"

  /**
   * The file indexes a literal condition prunes: a query's, prepared by Delta's data skipping, and the files a
   * DELETE, UPDATE or MERGE chose by that skipping (Delta's batch index), over which it looks for the rows its
   * condition matches. Exactly these classes: not the indexes of Delta's change data feed, nor one sparkbloom wraps.
   */
  private val LiteralPruned = Set(PreparedIndex, "org.apache.spark.sql.delta.files.TahoeBatchFileIndex")
  private def literalPruned(rel: HadoopFsRelation): Boolean = LiteralPruned(rel.location.getClass.getName)

  /** The Delta log file index under a plain read of a Delta table (aliases, projections, views allowed). */
  private def logIndex(plan: LogicalPlan): Option[(LogicalRelation, TahoeLogFileIndex)] = plan match {
    case FsRelation(l, rel, _, _, _) => rel.location match {
        case t: TahoeLogFileIndex => Some((l, t))
        case _ => None
      }
    case SubqueryAlias(_, child) => logIndex(child)
    case Project(_, child) => logIndex(child)
    case v: View => logIndex(v.child)
    case _ => None
  }

  override def tableOf(leaf: LogicalPlan): Option[TableRef] = leaf match {
    case FsRelation(l, rel, _, _, _) => rel.location match {
        case t: TahoeLogFileIndex => Some(l.catalogTable.map(c => TableRef.Catalog(c.identifier.unquotedString))
              .getOrElse(TableRef.Catalog(pathName(t.path.toString))))
        case _ => None
      }
    case _ => None
  }

  private def pathName(path: String): String = "delta.`" + path.replace("`", "``") + "`"

  /** Delta's streaming sink (`DeltaSink[path]`). */
  override def writtenBySink(session: SparkSession, description: String): Option[TableFormat.Written] =
    TableFormat.sinkPath(session, "DeltaSink", description).map(root =>
      TableFormat.Written(root, TableRef.Catalog(pathName(root.toString))))

  /**
   * The Delta tables a write commits to: `df.write.format("delta")` (by path or as a catalog table), INSERT, MERGE,
   * UPDATE, DELETE, OPTIMIZE and RESTORE, as Delta plans them (its commands, or Spark's V2 writes into a Delta table).
   */
  override def writtenBy(session: SparkSession, write: LogicalPlan): Seq[TableFormat.Written] = {
    def of(log: DeltaLog, table: Option[CatalogTable]): TableFormat.Written =
      TableFormat.Written(log.dataPath,
        TableRef.Catalog(table.map(_.identifier.unquotedString).getOrElse(pathName(log.dataPath.toString))))
    def v2(plan: LogicalPlan): Seq[TableFormat.Written] = plan match {
      case r: DataSourceV2Relation => r.table match {
          case t: DeltaTableV2 => Seq(of(t.deltaLog, t.catalogTable))
          case _ => Nil
        }
      case r: ResolvedCatalogTable => r.table match {
          case t: DeltaTableV2 => Seq(of(t.deltaLog, t.catalogTable))
          case _ => Nil
        }
      case _ => Nil
    }
    write match {
      case w: WriteIntoDelta => Seq(of(w.deltaLog, w.catalogTableOpt))
      case m: MergeIntoCommand => Seq(of(m.targetFileIndex.deltaLog, m.catalogTable))
      case u: UpdateCommand => Seq(of(u.tahoeFileIndex.deltaLog, u.catalogTable))
      case d: DeleteCommand => Seq(of(d.deltaLog, d.catalogTable))
      case o: OptimizeTableCommand => v2(o.child)
      case r: RestoreTableCommand => Seq(of(r.sourceTable.deltaLog, r.sourceTable.catalogTable))
      case s: SaveIntoDataSourceCommand if s.dataSource.isInstanceOf[DeltaDataSource] =>
        s.options.get("path").toSeq.map { p =>
          val path = new Path(p)
          val root = path.getFileSystem(session.sessionState.newHadoopConf()).makeQualified(path)
          TableFormat.Written(root, TableRef.Catalog(pathName(root.toString)))
        }
      case w: V2WriteCommand => v2(w.table)
      case _ => Nil
    }
  }

  override def resolve(spark: SparkSession, ref: TableRef, analyzed: () => Option[LogicalPlan],
                       refresh: Boolean): Option[ResolvedTable] = {
    val plan: Option[LogicalPlan] = ref match {
      case TableRef.Catalog(_) => analyzed()
      case TableRef.Path(p) =>
        // parquet.`/path` of a Delta table: its Parquet files are the log's business, so it is read as Delta.
        val path = new Path(p)
        val fs = path.getFileSystem(spark.sessionState.newHadoopConf())
        if (!fs.exists(new Path(path, "_delta_log"))) None
        else Some(spark.read.format("delta").load(p).queryExecution.analyzed)
    }
    plan.flatMap(logIndex).map { case (_, index) =>
      val shownRef = ref match {
        case TableRef.Path(_) => TableRef.Catalog(pathName(index.path.toString))
        case other => other
      }
      val snapshot = index.deltaLog.update()
      val metadata = snapshot.metadata
      ResolvedTable(shownRef, index.deltaLog.dataPath, metadata.schema, metadata.partitionColumns,
        () => {
          val current = index.deltaLog.update()
          TableListing(
            current.allFiles.collect().toSeq.map(a =>
              DataFile(index.absolutePath(a.path).toString, a.size, a.modificationTime)),
            Some(s"Delta version ${current.version}"))
        },
        fileColumn = f => (Some(DeltaColumnMapping.getPhysicalName(f)), None),
        changesSince = since => changesSince(index, since))
    }
  }

  private val VersionListed = """Delta version (\d+)""".r

  /** Commits read at most to bring an index up to date from the log; more, and the snapshot is listed whole. */
  val MaxCommitsRead = 100

  /**
   * The data files the commits after version `since` added and removed, read from those commits' JSON files alone
   * (no state reconstruction of the snapshot: a Spark job, and a read of the whole log, on every write). None when
   * the commits are not all there, or one of them changes the table's metadata (schema, column mapping: REPLACE
   * TABLE), or there are more than [[MaxCommitsRead]].
   */
  private def changesSince(index: TahoeLogFileIndex, since: String): Option[TableChanges] = since match {
    case VersionListed(v) =>
      val from = v.toLong
      val to = index.deltaLog.update().version
      if (to < from || to - from > MaxCommitsRead) None
      else if (to == from) Some(TableChanges(Nil, Set.empty, since))
      else {
        val commits = index.deltaLog.getChanges(from + 1).takeWhile(_._1 <= to).toVector
        if (commits.map(_._1) != (from + 1 to to) || commits.exists(_._2.exists(_.isInstanceOf[Metadata]))) None
        else Some(TableChanges.of(commits.iterator.map { case (_, actions) =>
            (actions.collect { case a: AddFile =>
                DataFile(index.absolutePath(a.path).toString, a.size, a.modificationTime)
              },
              actions.collect { case r: RemoveFile => index.absolutePath(r.path).toString })
          }, s"Delta version $to"))
      }
    case _ => None
  }

  override def rewrite(session: SparkSession, phase: TableFormat.Phase, filter: Filter,
                       plan: LogicalPlan): Option[LogicalPlan] = filter match {
    case f @ Filter(cond, FsRelation(l, rel, _, _, false)) if phase == TableFormat.PreCbo && literalPruned(rel) =>
      rewrite(session, Conditions.pushable(cond), l, rel).map(n => f.copy(child = n))
    case Filter(_, FsRelation(_, rel, _, _, false))
        if phase == TableFormat.PreCbo &&
          rel.location.isInstanceOf[TahoeLogFileIndex] =>
      checkOrder(session) // Delta's own rule has not prepared this scan: sparkbloom is listed before Delta
      None
    case _ => None
  }

  /** The relation whose file index also drops the files the indexes rule out; None when no index applies. */
  private def rewrite(session: SparkSession, cond: Expression, l: LogicalRelation,
                      rel: HadoopFsRelation): Option[LogicalRelation] = {
    val base = rel.location.asInstanceOf[TahoeFileIndexWithSnapshotDescriptor]
    val schema: StructType = base.metadata.schema
    val resolver = session.sessionState.conf.resolver
    // Attribute -> physical name in the files, through the scanned snapshot's column mapping.
    val physical: Map[ExprId, String] = l.output.flatMap { a =>
      schema.fields.find(f => resolver(f.name, a.name)).map(f => a.exprId -> DeltaColumnMapping.getPhysicalName(f))
    }.toMap
    val root = base.deltaLog.dataPath
    IndexDiscovery.indexesAt(session, root, cond,
      (id: ExprId, indexed: Seq[IndexedColumn]) =>
        physical.get(id).flatMap(p => indexed.find(_.sameColumn(p, None)).map(_.name))).map { case (_, used) =>
      val name = l.catalogTable.map(_.identifier.unquotedString).getOrElse(pathName(root.toString))
      val opts = NativeFilters.options(session, rel.options)
      val pruner = new IndexPruner(session, used, new RowGroupSelection(false), name, opts.int96Probes)
      l.copy(relation = rel.copy(location = new BloomDeltaFileIndex(base, pruner))(rel.sparkSession))
    }
  }

  override def keySetScan(session: SparkSession, leaf: LogicalPlan, attr: Attribute, nullFor: Option[Any],
                          label: String): Option[LogicalPlan] = leaf match {
    case FsRelation(l, rel, _, _, false) => rel.location match {
        case _: KeySetDeltaFileIndex | _: TahoeLogFileIndex => None // already keyed; not prepared by Delta
        case base: TahoeFileIndexWithSnapshotDescriptor =>
          val resolver = session.sessionState.conf.resolver
          if (base.metadata.partitionColumns.exists(resolver(_, attr.name))) return None
          val physical = base.metadata.schema.fields.find(f => resolver(f.name, attr.name))
            .map(DeltaColumnMapping.getPhysicalName)
          val root = base.deltaLog.dataPath
          val cols = IndexDiscovery.indexesOf(session, root, attr,
            (id: ExprId, indexed: Seq[IndexedColumn]) =>
              if (id != attr.exprId) None
              else physical.flatMap(p => indexed.find(_.sameColumn(p, None)).map(_.name)))
          if (cols.isEmpty) None
          else {
            val name = l.catalogTable.map(_.identifier.unquotedString).getOrElse(pathName(root.toString))
            val opts = NativeFilters.options(session, rel.options)
            val keySet = new KeySetPruner(session, cols, attr.exprId, attr.dataType, nullFor,
              new RowGroupSelection(false), name, opts.int96Probes, label)
            Some(l.copy(relation = rel.copy(location = new KeySetDeltaFileIndex(base, keySet))(rel.sparkSession)))
          }
        case _ => None
      }
    case _ => None
  }

  /** Sessions already told that sparkbloom's extension is listed before Delta's. */
  private val warned = Collections.synchronizedMap(new java.util.WeakHashMap[SparkSession, java.lang.Boolean]())

  /** Said once per session: with sparkbloom listed before Delta, Delta tables are read unpruned. */
  private def checkOrder(session: SparkSession): Unit = if (warned.put(session, true) == null) {
    val listed = session.sparkContext.getConf.get("spark.sql.extensions", "").split(",").map(_.trim)
    val mine = listed.indexWhere(_ == "sparkbloom.SparkBloomExtensions")
    val delta = listed.indexWhere(_.endsWith("DeltaSparkSessionExtension"))
    if (mine >= 0 && delta > mine)
      log.warn("sparkbloom: spark.sql.extensions lists sparkbloom.SparkBloomExtensions before Delta's extension, so " +
        "Delta tables are not pruned by bloom indexes; list io.delta.sql.DeltaSparkSessionExtension first " +
        "(sparkbloom.configure() does)")
  }
}
