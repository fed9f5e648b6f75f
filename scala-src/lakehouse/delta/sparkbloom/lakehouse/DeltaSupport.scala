package sparkbloom.lakehouse

import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.delta.{DeltaColumnMapping, RowIndexFilterType}
import org.apache.spark.sql.delta.actions.AddFile
import org.apache.spark.sql.delta.files.{TahoeFileIndex, TahoeFileIndexWithSnapshotDescriptor, TahoeLogFileIndex}
import org.apache.spark.sql.delta.stats.PreparedDeltaFileIndex
import org.apache.spark.sql.execution.datasources.{FileIndex, HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.types.StructType

import sparkbloom.BloomConf
import sparkbloom.index.{DataFile, ResolvedTable, TableListing, TableRef}
import sparkbloom.optimizer.{BloomSkippingRule, FsRelation}
import sparkbloom.scan.{IndexPruner, NativeFilters, PrunedSource, RowGroupSelection}

/**
 * Delta Lake tables (delta-spark). An index covers the data files of the table's current snapshot, keyed by
 * absolute path, size and modification time as Delta's log records them (the same figures Delta's scan
 * lists), and its columns by their **physical** names: under column mapping the files hold `col-<uuid>`
 * names, which RENAME COLUMN leaves alone, so a renamed column keeps its index.
 *
 * Pruning is per file only. Row groups are not cut: with deletion vectors Delta counts row indexes from
 * the start of what it reads, so a cut split would apply the vector to the wrong rows.
 */
object DeltaSupport {
  val compiled: Boolean = true
  private val PreparedIndex = "org.apache.spark.sql.delta.stats.PreparedDeltaFileIndex"

  def isPreparedIndex(f: FileIndex): Boolean = f.getClass.getName == PreparedIndex
  def isDeltaIndex(f: FileIndex): Boolean = f.isInstanceOf[TahoeLogFileIndex]

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

  def tableRef(plan: LogicalPlan): Option[TableRef] = logIndex(plan).map { case (l, t) =>
    l.catalogTable.map(c => TableRef.Catalog(c.identifier.unquotedString))
      .getOrElse(TableRef.Catalog(pathName(t.path.toString)))
  }

  private def pathName(path: String): String = "delta.`" + path.replace("`", "``") + "`"

  /** `ref` as a Delta table; `analyzed`: the plan of `spark.table(name)` for a catalog name (None: not a table). */
  def resolve(spark: SparkSession, ref: TableRef, analyzed: => Option[LogicalPlan]): Option[ResolvedTable] = {
    val plan: Option[LogicalPlan] = ref match {
      case TableRef.Catalog(_) => analyzed
      case TableRef.Path(p) =>
        // parquet.`/path` of a Delta table: its Parquet files are the log's business, so it is read as Delta.
        val path = new Path(p)
        val fs = path.getFileSystem(spark.sessionState.newHadoopConf())
        if (!fs.exists(new Path(path, "_delta_log"))) None
        else Some(spark.read.format("delta").load(p).queryExecution.analyzed)
    }
    plan.flatMap(logIndex).map { case (l, index) =>
      val shownRef = ref match {
        case TableRef.Path(_) => TableRef.Catalog(pathName(index.path.toString))
        case other => other
      }
      val snapshot = index.deltaLog.update()
      val metadata = snapshot.metadata
      ResolvedTable(shownRef, index.deltaLog.dataPath, metadata.schema, metadata.partitionColumns,
        () => {
          val current = index.deltaLog.update()
          TableListing(current.allFiles.collect().toSeq.map(a => DataFile(index.absolutePath(a.path).toString, a.size, a.modificationTime)),
            Some(s"Delta version ${current.version}"))
        },
        fileColumn = f => (Some(DeltaColumnMapping.getPhysicalName(f)), None))
    }
  }

  /** The relation whose file index also drops the files the indexes rule out; None when no index applies. */
  def rewrite(session: SparkSession, cond: Expression, l: LogicalRelation, rel: HadoopFsRelation): Option[LogicalRelation] = {
    val prepared = rel.location.asInstanceOf[PreparedDeltaFileIndex]
    val schema: StructType = prepared.metadata.schema
    val resolver = session.sessionState.conf.resolver
    // Attribute -> physical name in the files, through the scanned snapshot's column mapping.
    val physical: Map[ExprId, String] = l.output.flatMap { a =>
      schema.fields.find(f => resolver(f.name, a.name)).map(f => a.exprId -> DeltaColumnMapping.getPhysicalName(f))
    }.toMap
    val root = prepared.deltaLog.dataPath
    BloomSkippingRule.indexesAt(session, root, cond,
      (id: ExprId, indexed: Seq[sparkbloom.index.IndexedColumn]) =>
        physical.get(id).flatMap(p => indexed.find(_.sameColumn(p, None)).map(_.name))).map { case (_, used) =>
      val name = l.catalogTable.map(_.identifier.unquotedString).getOrElse(pathName(root.toString))
      val opts = NativeFilters.options(session, rel.options)
      val pruner = new IndexPruner(session, used, new RowGroupSelection(false), name, opts.int96Probes)
      l.copy(relation = rel.copy(location = new BloomDeltaFileIndex(prepared, pruner))(rel.sparkSession))
    }
  }
}

/**
 * Delta's prepared file index, minus the files bloom indexes rule out. A Delta file index itself (Delta's
 * deletion-vector strategy only applies to one): the files it returns are Delta's own `AddFile`s, deletion
 * vectors included, so deleted rows stay deleted; the format stays `DeltaParquetFileFormat`.
 */
class BloomDeltaFileIndex(val prepared: PreparedDeltaFileIndex, val pruner: IndexPruner)
  extends TahoeFileIndexWithSnapshotDescriptor(prepared.spark, prepared.deltaLog, prepared.path,
    prepared.preparedScan.scannedSnapshot) with PrunedSource {

  override def matchingFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[AddFile] = {
    val files = prepared.matchingFiles(partitionFilters, dataFilters)
    try {
      val statuses = files.map(a => new FileStatus(a.size, false, 0, 0L, a.modificationTime, absolutePath(a.path))).toArray
      val kept = pruner.keep(statuses)
      files.indices.filter(kept.get).map(files)
    } catch {
      case NonFatal(e) =>
        org.slf4j.LoggerFactory.getLogger(getClass).warn(s"sparkbloom: reading every file Delta kept for ${pruner.tableName} after an error while pruning: $e")
        files
    }
  }

  override def rowIndexFilters: Option[Map[String, RowIndexFilterType]] = prepared.rowIndexFilters
  override def inputFiles: Array[String] = prepared.inputFiles
  override def refresh(): Unit = prepared.refresh()
  override def sizeInBytes: Long = prepared.sizeInBytes

  override def toString: String = s"BloomDeltaFileIndex(indexes=[${pruner.indexNames}], predicate=[${pruner.predicateSql}], $prepared)"
  override def equals(o: Any): Boolean = o match {
    case b: BloomDeltaFileIndex => (b eq this) || (b.prepared == prepared && b.pruner.predicateSql == pruner.predicateSql &&
      b.pruner.indexNames == pruner.indexNames)
    case _ => false
  }
  override def hashCode(): Int = prepared.hashCode() * 31 + pruner.predicateSql.hashCode
}
