package sparkbloom.scan

import java.lang.ref.WeakReference

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.SparkPlan

import sparkbloom.index.ScanSkipping

/**
 * What each executed [[BloomScanMetricsExec]] node of this driver knew when its scan ran, by the node's id: the
 * index, table and predicate behind its metrics, and the scan's own table and format. A client that receives a
 * query's metrics with its results but never sees the plan (Spark Connect: `DataFrame.executionInfo`, the metrics
 * of `toPandas()`) gets the figures from the metrics and these names from here (`SPARKBLOOM API scans`).
 *
 * The last [[MaxNodes]] nodes are kept, each for the session that ran it only.
 */
object ExecutedScans {
  final case class Record(skipping: Option[ScanSkipping], scanTable: String, scanFormat: String)

  val MaxNodes = 4096

  private val records = new java.util.LinkedHashMap[Integer, (WeakReference[AnyRef], Record)](64, 0.75f, false) {
    override def removeEldestEntry(e: java.util.Map.Entry[Integer, (WeakReference[AnyRef], Record)]): Boolean =
      size() > MaxNodes
  }

  /** Records `node` (a metrics node) over `scan` for the session running it. Never throws. */
  def record(node: SparkPlan, scan: SparkPlan): Unit =
    try {
      val session = SparkSession.getActiveSession.orNull
      if (session != null) {
        val (table, format) = SkippingReport.scanOf(scan).getOrElse(("", ""))
        val rec = Record(SkippingReport.forPlan(scan).headOption, table, format)
        records.synchronized(records.put(node.id, (new WeakReference[AnyRef](session), rec)))
      }
    } catch { case scala.util.control.NonFatal(_) => () } // names for a client; never fails the query

  /** The records of the nodes `ids` that `session` ran (nodes of other sessions, or forgotten, are left out). */
  def of(session: SparkSession, ids: Seq[Int]): Seq[(Int, Record)] = records.synchronized {
    ids.flatMap(id => Option(records.get(id)).collect { case (s, r) if s.get() eq session => id -> r })
  }
}
