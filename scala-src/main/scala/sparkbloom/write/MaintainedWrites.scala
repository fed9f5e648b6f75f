package sparkbloom.write

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand
import org.apache.spark.sql.execution.metric.SQLMetric

import sparkbloom.index.{IndexDescription, TableFormat}
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
 * `spark.sparkbloom.maintainOnWrite.enabled` (on by default, see docs/maintenance-on-write.md). An
 * overwrite that deletes the table's directory, its indexes with it, gets them made again, with the same columns and
 * options, over the files it wrote.
 */
final case class IndexMaintainingWrite(inner: InsertIntoHadoopFsRelationCommand,
                                       byTasks: Option[TaskIndexing.IndexedByTasks] = None)
  extends DelegatingWriteCommand {
  override def query: LogicalPlan = inner.query
  override def outputColumnNames: Seq[String] = inner.outputColumnNames
  override lazy val metrics: Map[String, SQLMetric] = inner.metrics

  /** An overwrite may delete the table's directory, its indexes with it: their definitions, to make them again. */
  @transient private var definitions: Seq[IndexDescription] = Nil

  override protected def beforeRun(session: SparkSession): Unit =
    definitions = if (inner.mode == SaveMode.Overwrite) MaintainOnWrite.definitions(session, inner) else Nil

  override protected def afterRun(session: SparkSession): Unit = byTasks match {
    case Some(b) => TaskIndexing.commitIndexedByTasks(session, inner, b)
    case None => MaintainOnWrite.afterWrite(session, inner, definitions)
  }

  override protected def withNewChildInternal(newChild: LogicalPlan): IndexMaintainingWrite =
    copy(inner = inner.withNewChildren(Seq(newChild)).asInstanceOf[InsertIntoHadoopFsRelationCommand])
}

/**
 * A write into a Delta or Iceberg table (an append, an overwrite, MERGE, UPDATE, DELETE, Delta's OPTIMIZE), run as
 * the table format plans it, then each bloom index on the tables it committed to refreshed incrementally before the
 * write returns: the new files are indexed (the files' own filters harvested, or their indexed columns read) and
 * the files the commit removed are dropped. A failed write fails as it would have; a failed refresh is logged and
 * leaves the index as it was, the new files merely uncovered (never a failed write).
 */
final case class IndexMaintainingTableWrite(child: SparkPlan, written: Seq[TableFormat.Written],
                                            byTasks: Option[TaskIndexing.V2IndexedByTasks] = None)
  extends UnaryExecNode {
  override def output: Seq[Attribute] = child.output
  override def nodeName: String = "MaintainBloomIndexes"
  override def simpleString(maxFields: Int): String =
    s"$nodeName [${written.map(_.table.display).mkString(", ")}]${if (byTasks.isDefined) " in write tasks" else ""}"

  private def maintained[T](result: T): T = {
    val s = Option[SparkSession](session).getOrElse(SparkSession.active)
    byTasks match {
      case Some(b) => TaskIndexing.commitV2IndexedByTasks(s, written.head, b)
      case None => MaintainOnWrite.afterTableWrite(s, written)
    }
    result
  }
  override def executeCollect(): Array[InternalRow] = maintained(child.executeCollect())
  override protected def doExecute(): RDD[InternalRow] = maintained(child.execute())
  override protected def withNewChildInternal(newChild: SparkPlan): IndexMaintainingTableWrite =
    copy(child = newChild)
}
