package sparkbloom.formats.iceberg

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.iceberg.{FileScanTask, ScanTask}
import org.apache.spark.sql.connector.expressions.NamedReference
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan}
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

import sparkbloom.index.{IndexPruner, KeySetPruner, PrunedSource, SerializableConf}

/**
 * Key-set pruning of an Iceberg batch scan: Iceberg's own scan (`SparkBatchQueryScan`), whose data-file tasks are
 * chosen when the scan runs, by the keys a join's other side, an `IN (subquery)` or an `EXISTS` gives
 * ([[KeySetPruner]], bound to the plan's run-time filter). Until then, and when pruning is declined or fails, it is
 * Iceberg's scan, task for task.
 *
 * Iceberg plans a scan's tasks once and lets Spark's run-time filters (dynamic partition pruning) narrow them
 * (`SupportsRuntimeV2Filtering.filter`: the scan keeps the tasks that pass and regroups them). This does the same
 * with the keys: at execution, the scan's planned tasks are read (`tasks()`), the data files the indexes rule out
 * are dropped (delete files stay with the data files kept), and the scan is reset to the rest (`resetTasks`, as its
 * own `filter` does) before its partitions are planned. Those two methods are protected in Iceberg: they are
 * reached by reflection, and when a later Iceberg renames them the scan is read whole (never wrong).
 */
final class KeySetIcebergScan(val delegate: Scan, val keySet: KeySetPruner, conf: SerializableConf)
  extends Scan with SupportsRuntimeV2Filtering with PrunedSource {

  override def pruner: IndexPruner = keySet.pruner
  override def readSchema(): StructType = delegate.readSchema()
  override def description(): String = s"${delegate.description()} (bloom indexes: ${keySet.label})"
  override def supportedCustomMetrics(): Array[CustomMetric] = delegate.supportedCustomMetrics()
  override def reportDriverMetrics(): Array[CustomTaskMetric] = delegate.reportDriverMetrics()

  private def runtime: Option[SupportsRuntimeV2Filtering] = delegate match {
    case r: SupportsRuntimeV2Filtering => Some(r)
    case _ => None
  }
  override def filterAttributes(): Array[NamedReference] = runtime.map(_.filterAttributes()).getOrElse(Array.empty)
  override def filter(predicates: Array[Predicate]): Unit = runtime.foreach(_.filter(predicates))

  /** The tasks are pruned once, when Spark first plans this scan's partitions (execution). */
  @transient @volatile private var pruned = false

  private[iceberg] def pruneOnce(): Unit = synchronized {
    if (!pruned) {
      pruned = true
      try KeySetIcebergScan.prune(delegate, keySet, conf)
      catch {
        case NonFatal(e) =>
          LoggerFactory.getLogger(getClass)
            .warn(s"sparkbloom: run-time pruning of ${keySet.tableName} left out after an error: $e")
      }
    }
  }

  override def toBatch: Batch = new KeySetIcebergBatch(this)

  override def equals(o: Any): Boolean = o match {
    case k: KeySetIcebergScan => (k eq this) || (k.delegate == delegate && k.keySet.label == keySet.label)
    case _ => false
  }
  override def hashCode(): Int = delegate.hashCode() * 31 + keySet.label.hashCode
  override def toString: String = description()
}

/** The scan's batch: its partitions are Iceberg's, planned after the key-set pruning of its tasks. */
final class KeySetIcebergBatch(scan: KeySetIcebergScan) extends Batch {
  @transient private lazy val batch: Batch = { scan.pruneOnce(); scan.delegate.toBatch }
  override def planInputPartitions(): Array[InputPartition] = batch.planInputPartitions()
  override def createReaderFactory(): PartitionReaderFactory = batch.createReaderFactory()
  override def equals(o: Any): Boolean = o match {
    case b: KeySetIcebergBatch => b.scanRef == scanRef
    case _ => false
  }
  override def hashCode(): Int = scanRef.hashCode()
  private def scanRef: KeySetIcebergScan = scan
}

object KeySetIcebergScan {
  /** Iceberg's scans that plan tasks once and narrow them at run time (the class holding both methods). */
  private val Base = "org.apache.iceberg.spark.source.SparkPartitioningAwareScan"

  private lazy val methods: Option[(java.lang.reflect.Method, java.lang.reflect.Method)] =
    try {
      val base = Class.forName(Base, false, classOf[FileScanTask].getClassLoader)
      val tasks = base.getDeclaredMethod("tasks")
      val reset = base.getDeclaredMethod("resetTasks", classOf[java.util.List[_]])
      tasks.setAccessible(true); reset.setAccessible(true)
      Some((tasks, reset))
    } catch { case NonFatal(_) | _: LinkageError => None }

  /** Whether `scan` is one this can prune (Iceberg's batch query scan, its methods reachable). */
  def supports(scan: Scan): Boolean =
    scan.getClass.getName == "org.apache.iceberg.spark.source.SparkBatchQueryScan" && methods.isDefined

  /** `scan` reset to the tasks whose data files may hold a key; unchanged when pruning is declined. */
  private def prune(scan: Scan, keySet: KeySetPruner, conf: SerializableConf): Unit = methods.foreach {
    case (tasksOf, reset) =>
      val tasks = tasksOf.invoke(scan).asInstanceOf[java.util.List[ScanTask]].asScala.toVector
      def key(f: FileScanTask) = (IcebergFormat.qualify(f.file().location(), conf.value), f.file().fileSizeInBytes())
      val files = tasks.collect { case f: FileScanTask => key(f) }.distinct
      val statuses = files.map { case (p, size) => new FileStatus(size, false, 0, 0L, 0L, new Path(p)) }.toArray
      keySet.keep(statuses).foreach { kept =>
        val keep = files.indices.filter(kept.get).map(files).toSet
        val rest = tasks.filter {
          case f: FileScanTask => keep.contains(key(f))
          case _ => true // not a data-file task: Iceberg's to decide
        }
        if (rest.size < tasks.size) reset.invoke(scan, rest.asJava)
      }
  }
}
