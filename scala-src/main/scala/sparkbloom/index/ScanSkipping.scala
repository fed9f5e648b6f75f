package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession

/** What a bloom index did for one scan: kept / total files and row groups. */
final case class ScanSkipping(
    index: String, // "name on table" of each index used, comma separated
    table: String,
    predicate: String, // the pushed predicate, as in EXPLAIN
    filesTotal: Long,
    filesKept: Long,
    rowGroupsTotal: Long,
    rowGroupsKept: Long,
    filesNotCovered: Long, // read because they are new/changed/not in the index
    indexBytesRead: Long = 0L, // bytes of filter runs read from storage (not from the driver's cache)
    probeTimeNs: Long = 0L, // time spent probing and deciding, at planning
    distributedProbe: Boolean = false, // the probe ran as a Spark job (the runs did not fit the cache)
    keysProbed: Long = 0L, // run-time pruning: the distinct keys the other side of the join produced
    // Read time, on the executors (0 until the scan has run): row groups checked against / skipped by the
    // files' own bloom filters, and filters ignored as corrupt or unsupported.
    nativeRowGroupsChecked: Long = 0L,
    nativeRowGroupsSkipped: Long = 0L,
    nativeFiltersInvalid: Long = 0L)

/** The pruning decisions this driver has taken: the last one, and a sum per index (DESCRIBE BLOOM INDEX). */
object SkippingLog {
  /**
   * What one index did for the lookups this driver planned since it started (DESCRIBE BLOOM INDEX shows it):
   * the same figures as the scans' SQL metrics, summed.
   */
  final case class Usage(lookups: Long, filesSkipped: Long, rowGroupsSkipped: Long, indexBytesRead: Long,
                         probeTimeNs: Long) {
    def +(s: ScanSkipping): Usage = Usage(lookups + 1, filesSkipped + s.filesTotal - s.filesKept,
      rowGroupsSkipped + s.rowGroupsTotal - s.rowGroupsKept, indexBytesRead + s.indexBytesRead,
      probeTimeNs + s.probeTimeNs)
  }
  private val usage = new java.util.concurrent.ConcurrentHashMap[String, Usage]()
  private[index] def recordUsage(indexDir: String, s: ScanSkipping): Unit =
    usage.compute(indexDir, (_, u) => (if (u == null) Usage(0, 0, 0, 0, 0) else u) + s)
  /** The lookups planned with the index stored at `indexDir` in this driver, summed. */
  def usageOf(indexDir: String): Usage = Option(usage.get(indexDir)).getOrElse(Usage(0, 0, 0, 0, 0))

  /**
   * Told of each lookup that read files an index does not cover (written since its last refresh by a write it was not
   * told of): the lookup's session, the index's version and the lookup's figures. The `sql` layer's background
   * maintenance listens (one listener per JVM, [[onUncovered]]); what it throws is dropped, never the lookup's.
   */
  type UncoveredListener = (SparkSession, IndexVersion, ScanSkipping) => Unit
  @volatile private var uncoveredListener: UncoveredListener = (_, _, _) => ()
  def onUncovered(listener: UncoveredListener): Unit = uncoveredListener = listener
  private[index] def recordUncovered(session: SparkSession, v: IndexVersion, s: ScanSkipping): Unit =
    try uncoveredListener(session, v, s)
    catch { case NonFatal(_) => }

  @volatile private var last: Option[ScanSkipping] = None
  private[index] def record(s: ScanSkipping): Unit = last = Some(s)
  /** The most recent pruning decision in this JVM (for tools and tests). */
  def lastRecorded: Option[ScanSkipping] = last
}
