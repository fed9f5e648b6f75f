package sparkbloom.index

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkContext
import org.apache.spark.broadcast.Broadcast

/**
 * A scan's Hadoop conf broadcast to the executors, shared by the scans whose conf has the same entries.
 *
 * A read-time check (the files' own bloom filters, NanGuard's `created_by`) reads files on the executors with the
 * scan's Hadoop conf. Broadcasting it costs the driver a serialisation of every entry (about a thousand, defaults
 * included) on each scan's critical path: about a third of what building a V1 Parquet reader costs (profiled). The
 * conf of a scan is the session's plus the relation's options, the same for every query over a relation, so the
 * last broadcast of each SparkContext is kept and reused when the entries are equal (compared entry by entry, not
 * by hash). Reuse is only ever of a conf with exactly the entries the scan asked for.
 */
object ConfBroadcast {
  private final class Entry(val sc: SparkContext, val entries: Map[String, String],
                            val broadcast: Broadcast[SerializableConf])

  @volatile private var last: Entry = null

  /** The entries of `conf` (defaults and overlays resolved as Configuration.iterator gives them). */
  private def entriesOf(conf: Configuration): Map[String, String] =
    conf.iterator().asScala.map(e => e.getKey -> e.getValue).toMap

  /** A broadcast of `conf` (a snapshot of its entries now), the previous one when its entries are equal. */
  def of(sc: SparkContext, conf: Configuration): Broadcast[SerializableConf] = {
    val entries = entriesOf(conf)
    val prev = last
    if (prev != null && (prev.sc eq sc) && !sc.isStopped && prev.entries == entries) prev.broadcast
    else {
      val b = sc.broadcast(new SerializableConf(new LeanConf(conf)))
      last = new Entry(sc, entries, b)
      b
    }
  }
}
