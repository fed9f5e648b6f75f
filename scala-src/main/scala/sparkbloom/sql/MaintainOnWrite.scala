package sparkbloom.sql

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.{SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}
import org.apache.spark.sql.execution.command.DataWritingCommandExec
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.metric.SQLMetric

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.index.{IndexDescription, IndexStore, TableRef}
import sparkbloom.shims.DelegatingWriteCommand

/**
 * Maintenance on write: Spark's own write of Parquet files into a table (`INSERT INTO` / `INSERT OVERWRITE`,
 * `df.write` to a path or a catalog table, partitioned or not) brings the table's bloom indexes up to date before the
 * write returns, so its files are covered from the first lookup after it. The write itself is Spark's, unchanged:
 * the command runs as it would, then each index on the table gets an incremental refresh (the new files' filters are
 * harvested from their footers, or built from their indexed columns; files gone from the table are dropped).
 *
 * An index update that fails is logged and leaves the index as it was, its new files merely uncovered (read by every
 * lookup until the next write or `REFRESH BLOOM INDEX`): a failure to index never fails the user's write. On with
 * `spark.sparkbloom.maintainOnWrite.enabled=true` (off by default for now, see docs/maintenance-on-write.md). An
 * overwrite that deletes the table's directory, its indexes with it, gets them made again, with the same columns and
 * options, over the files it wrote.
 */
final case class IndexMaintainingWrite(inner: InsertIntoHadoopFsRelationCommand) extends DelegatingWriteCommand {
  override def query: LogicalPlan = inner.query
  override def outputColumnNames: Seq[String] = inner.outputColumnNames
  override lazy val metrics: Map[String, SQLMetric] = inner.metrics

  /** An overwrite may delete the table's directory, its indexes with it: their definitions, to make them again. */
  @transient private var definitions: Seq[IndexDescription] = Nil

  override protected def beforeRun(session: SparkSession): Unit =
    definitions = if (inner.mode == SaveMode.Overwrite) MaintainOnWrite.definitions(session, inner) else Nil

  override protected def afterRun(session: SparkSession): Unit =
    MaintainOnWrite.afterWrite(session, inner, definitions)

  override protected def withNewChildInternal(newChild: LogicalPlan): IndexMaintainingWrite =
    copy(inner = inner.withNewChildren(Seq(newChild)).asInstanceOf[InsertIntoHadoopFsRelationCommand])
}

object MaintainOnWrite extends Logging {
  /** The physical rule: Parquet writes into a table that has bloom indexes run through [[IndexMaintainingWrite]]. */
  final class WrapRule(session: SparkSession) extends ColumnarRule {
    override def preColumnarTransitions: Rule[SparkPlan] = (plan: SparkPlan) =>
      plan match {
        case w @ DataWritingCommandExec(cmd: InsertIntoHadoopFsRelationCommand, _) if applies(session, cmd) =>
          w.copy(cmd = IndexMaintainingWrite(cmd))
        case other => other
      }
  }

  /** A Parquet write into a table with at least one bloom index, maintenance on. Never throws. */
  def applies(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand): Boolean =
    try BloomConf.maintainOnWrite(session) && cmd.fileFormat.isInstanceOf[ParquetFileFormat] &&
        indexNames(session, cmd.outputPath).nonEmpty
    catch { case NonFatal(_) => false }

  /** The indexes stored under the table at `root` (only their directories: no table listing). */
  private def indexNames(session: SparkSession, root: Path): Seq[String] = {
    val dir = IndexStore.indexesDir(root, BloomConf.indexRoot(session))
    val fs = dir.getFileSystem(session.sessionState.newHadoopConf())
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isDirectory).map(_.getPath)
      .filter(p => IndexStore.versions(fs, p).nonEmpty).map(_.getName).sorted
  }

  private def tableOf(cmd: InsertIntoHadoopFsRelationCommand): TableRef =
    cmd.catalogTable.map(t => TableRef.Catalog((t.identifier.database.toSeq :+ t.identifier.table).mkString(".")))
      .getOrElse(TableRef.Path(cmd.outputPath.toString))

  /** The table's indexes as they are before an overwrite. Never throws (none, on any error). */
  def definitions(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand): Seq[IndexDescription] =
    try BloomIndexes.list(session, tableOf(cmd))
    catch { case NonFatal(e) => logWarning(s"sparkbloom: cannot read the bloom indexes of ${tableOf(cmd)}", e); Nil }

  /**
   * After the write committed: an incremental refresh of each index on the table, and the indexes an overwrite
   * deleted (`before`) made again over the new files. Never throws.
   */
  def afterWrite(session: SparkSession, cmd: InsertIntoHadoopFsRelationCommand, before: Seq[IndexDescription]): Unit = {
    val table = tableOf(cmd)
    val names = try indexNames(session, cmd.outputPath)
    catch { case NonFatal(e) => logWarning(s"sparkbloom: cannot list the bloom indexes of $table", e); Nil }
    def attempt(name: String)(update: => Unit): Unit =
      try update
      catch {
        case NonFatal(e) =>
          logWarning(
            s"sparkbloom: the write into $table committed, but bloom index $name could not take its new " +
              "files (they are read by every lookup until the next write or REFRESH BLOOM INDEX)", e)
      }
    names.foreach(name => attempt(name)(BloomIndexes.refresh(session, table, name, full = false)))
    before.filterNot(d => names.exists(_.equalsIgnoreCase(d.name))).foreach { d =>
      val options = Seq(d.fpp.map("fpp" -> _.toString), d.ndv.map("ndv" -> _.toString),
        d.falseReadsPerKey.map(BloomIndexes.FalseReadsPerKeyKey -> _.toString)).flatten.toMap
      attempt(d.name)(BloomIndexes.create(session, table, d.name, d.columns, options, ifNotExists = true))
    }
  }
}
