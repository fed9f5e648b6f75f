package sparkbloom.write

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.SparkContext
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.streaming.StreamingQueryListener

import sparkbloom.BloomConf
import sparkbloom.api.BloomIndexes
import sparkbloom.formats.TableFormats
import sparkbloom.index.{BackgroundOptimizer, IndexVersion, ScanSkipping, SkippingLog, TableFormat, TableRef}

/**
 * Maintenance in the background, for writes whose end no command of this session marks:
 *  - Structured Streaming sinks that commit without a command Spark plans (the file sink, Delta's sink): after each
 *    micro-batch, its progress event names the sink, and the sink's table, when it has maintained indexes, gets the
 *    incremental refresh of a write ([[MaintainOnWrite.afterTableWrite]]). The next batch waits for that refresh
 *    before it is planned ([[StreamingCatchUp.beforeStreamingPlan]]; Iceberg's batch right after its commit), so a
 *    lookup reads at most one batch the index does not cover (writes through `foreachBatch` are Spark or
 *    table-format writes, maintained before they return).
 *  - Catch-up after a read: a lookup that read files a maintained index does not cover (written by another engine,
 *    by a session with maintenance off, or by a write sparkbloom is not told of, such as Iceberg's
 *    `rewrite_data_files` procedure or Delta's REPLACE TABLE) queues the same refresh of its table
 *    (`spark.sparkbloom.maintainOnWrite.refreshOnRead`, on by default). After a refresh of a table fails, lookups do
 *    not queue it again for [[RetryAfterMs]] (a reader without write access to the table's storage fails every time).
 * The refreshes run on one background thread per application, in the order they are asked for; a table already
 * waiting for a refresh is not queued twice, so a refresh slower than the writes covers several of them at once.
 */
object BackgroundMaintenance extends Logging {
  import StreamingCatchUp.{
    afterBatch, covered, coveredThrough, forget, indexed, sinkTables, streamingBatch, waitFor, BatchIdKey, QueryIdKey
  }

  private val registered = new java.util.WeakHashMap[SparkContext, Listener]()
  val RetryAfterMs: Long = 10 * 60 * 1000L

  /** Listens to `session`'s application (once per SparkContext); refreshes run with `session`'s settings. */
  def register(session: SparkSession): Unit = {
    val sc = session.sparkContext
    if (!registered.containsKey(sc)) registered.synchronized {
      if (!registered.containsKey(sc)) {
        val l = new Listener(session)
        sc.addSparkListener(l)
        registered.put(sc, l)
        SkippingLog.onUncovered(catchUp)
      }
    }
    if (watching.compareAndSet(false, true))
      TableFormats.all.foreach(f =>
        try f.watchCommits(committed)
        catch {
          case e @ (NonFatal(_) | _: LinkageError) => logWarning(s"sparkbloom: ${f.name} commits are not watched", e)
        })
  }

  private val watching = new java.util.concurrent.atomic.AtomicBoolean(false)

  /**
   * A commit no plan marked (a table format's procedure, a streaming sink; [[TableFormat.watchCommits]]), heard of on
   * the committing thread: a statement's commit brings the table's maintained indexes up to date before it returns
   * (on that thread, with the statement's session), a streaming batch's is queued, as the other sinks' are. Never
   * throws.
   */
  private def committed(c: TableFormat.Commit): Unit =
    try {
      val onThread = SparkSession.getActiveSession
      onThread.orElse(SparkSession.getDefaultSession).filter(s => !s.sparkContext.isStopped).foreach { session =>
        if (BloomConf.maintainOnWrite(session)) {
          // A table with no maintained index is only looked up (no cache of it refreshed, nothing listed).
          def written(): Option[TableFormat.Written] = {
            val root = BloomIndexes.resolve(session, c.table).root
            if (MaintainOnWrite.indexNames(session, root).isEmpty) None
            else Some(TableFormat.Written(BloomIndexes.resolve(session, c.table, refresh = true).root, c.table))
          }
          if (onThread.isDefined && !c.streaming) written().foreach { w =>
            logInfo(s"sparkbloom: refreshing the bloom indexes of ${c.table.display} (${c.what})")
            MaintainOnWrite.afterTableWrite(session, Seq(w))
          }
          else listenerOf(session).foreach { l =>
            val refreshed = l.queue(c.table.display, written(), c.what, afterLookup = false, session)
            if (c.streaming) streamingBatch(session).foreach { case (query, batch) =>
              l.whenRefreshed(refreshed, query, batch)
              waitFor(session, c.table.display, refreshed, s"streaming batch $batch of query $query")
            }
          }
        }
      }
    } catch {
      case NonFatal(e) =>
        logWarning(s"sparkbloom: bloom indexes of ${c.table.display} not brought up to date (${c.what})", e)
    }

  /**
   * Waits until every refresh queued for `session`'s application so far has run, and every background OPTIMIZE
   * queued by then or by those refreshes (tests, benchmarks); false after `timeoutMs`.
   */
  def await(session: SparkSession, timeoutMs: Long): Boolean = {
    val deadline = System.currentTimeMillis() + timeoutMs
    // the refreshes first: one may queue an OPTIMIZE
    listenerOf(session).forall(_.await(timeoutMs)) && BackgroundOptimizer.drained(deadline - System.currentTimeMillis())
  }

  /**
   * OPTIMIZE BLOOM INDEX of the index at `dir` on `table`, on the background optimizer's thread (one per JVM, one index
   * at a time: [[BackgroundOptimizer]]), with the settings of `session`; not queued again while one is queued or
   * running for that index. The writes and refreshes that commit meanwhile are not held up: the OPTIMIZE re-bases its
   * commit on theirs ([[sparkbloom.index.IndexManager.optimize]]). A failure is logged: the index stays as it was, its
   * small segments read as before.
   */
  def optimize(session: SparkSession, table: TableRef, dir: Path): Unit =
    BackgroundOptimizer.submit(session, dir.toString, s"bloom index ${dir.getName} of ${table.display}") {
      BloomIndexes.optimize(session, table, dir.getName)
    }

  /** Test hook: runs on the background thread before each refresh of a table with maintained indexes. */
  @volatile private[sparkbloom] var beforeRefresh: () => Unit = () => ()

  private[write] def listenerOf(session: SparkSession): Option[Listener] =
    Option(registered.synchronized(registered.get(session.sparkContext)))

  /** A lookup read files index `v` does not cover: its table's maintained indexes are refreshed, when allowed. */
  private def catchUp(session: SparkSession, v: IndexVersion, s: ScanSkipping): Unit =
    if (BloomConf.refreshOnRead(session) && BloomConf.maintainOnWrite(session) &&
      !v.meta.maintainOnWrite.contains(false)) {
      listenerOf(session).foreach(_.queue(
          TableFormat.Written(new Path(v.meta.tableRoot), TableRef.ofDisplay(v.meta.table)),
          s"a lookup read ${s.filesNotCovered} files bloom index ${v.meta.name} does not cover", afterLookup = true,
          session))
    }

  final class Listener(session: SparkSession) extends SparkListener {
    private val failedAt = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Long]()
    private val executor = java.util.concurrent.Executors.newSingleThreadExecutor { (r: Runnable) =>
      val t = new Thread(r, "sparkbloom-background-maintenance")
      t.setDaemon(true)
      t
    }

    override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
      case e: StreamingQueryListener.QueryProgressEvent if e.progress.sink != null =>
        try {
          if (BloomConf.maintainOnWrite(session)) {
            val query = e.progress.id.toString
            val written = TableFormats.all.iterator.flatMap(_.writtenBySink(session, e.progress.sink.description))
            written.take(1).foreach { w =>
              sinkTables.put(query, w)
              // the batch's refresh, unless the next batch waited for one that covers it already
              // an idle trigger's progress names the batch to come, not one that ran: it covers nothing yet
              val ran = Option(e.progress.durationMs).exists(_.containsKey("addBatch"))
              if (Option(coveredThrough.get(query)).forall(_ < e.progress.batchId)) {
                val refreshed = queue(w, "after a streaming batch", afterLookup = false)
                if (ran) {
                  afterBatch.put(query, (e.progress.batchId, refreshed))
                  whenRefreshed(refreshed, query, e.progress.batchId)
                }
              }
            }
          }
        } catch {
          case NonFatal(t) => logWarning("sparkbloom: a streaming batch's sink could not be told", t)
        }
      case e: StreamingQueryListener.QueryTerminatedEvent => forget(e.id.toString)
      case _ =>
    }

    /** Once `refreshed` has run without error, batch `batch` of streaming query `query` is covered. */
    def whenRefreshed(refreshed: java.util.concurrent.CompletableFuture[java.lang.Boolean], query: String,
                      batch: Long): Unit =
      refreshed.thenAccept((ok: java.lang.Boolean) => if (ok) covered(query, batch))

    /**
     * Queues the refresh of `w`'s maintained indexes, unless one is waiting or, for a catch-up `afterLookup`, one
     * failed within [[RetryAfterMs]] (every streaming batch is followed by a refresh, as before). The future completes
     * when a refresh that started after this call has run: true when it ran without error.
     */
    def queue(w: TableFormat.Written, why: String, afterLookup: Boolean,
              in: SparkSession = session): java.util.concurrent.CompletableFuture[java.lang.Boolean] =
      queue(w.root.toString, Some(w), why, afterLookup, in)

    private val pending = new java.util.concurrent.ConcurrentHashMap[String,
      java.util.concurrent.CompletableFuture[java.lang.Boolean]]()

    /**
     * The same, `written` resolved on the background thread (None: nothing to refresh). The refresh runs with the
     * settings of `in`, the session that wrote or looked up (a streaming sink's batch names none: the session that
     * registered this listener).
     */
    def queue(key: String, written: => Option[TableFormat.Written], why: String, afterLookup: Boolean,
              in: SparkSession): java.util.concurrent.CompletableFuture[java.lang.Boolean] = {
      val failed = afterLookup && Option(failedAt.get(key)).exists(t => System.currentTimeMillis() - t < RetryAfterMs)
      if (failed) return java.util.concurrent.CompletableFuture.completedFuture(false)
      val mine = new java.util.concurrent.CompletableFuture[java.lang.Boolean]()
      val queued = pending.putIfAbsent(key, mine)
      if (queued != null) return queued
      executor.execute { () =>
        pending.remove(key, mine)
        var ok = false
        try {
          // a pool thread started from a streaming query's thread inherits its local properties: not its query's
          val sc = in.sparkContext
          sc.setLocalProperty(QueryIdKey, null)
          sc.setLocalProperty(BatchIdKey, null)
          sc.clearJobGroup()
          SparkSession.setActiveSession(in)
          val resolved = written
          resolved match {
            case None => indexed.put(key, false); ok = true
            case Some(w) =>
              indexed.put(key, MaintainOnWrite.indexNames(in, w.root).nonEmpty)
              logInfo(s"sparkbloom: refreshing the bloom indexes of ${w.table.display} ($why)")
              beforeRefresh()
              if (MaintainOnWrite.afterTableWrite(in, Seq(w), fromLog = !afterLookup)) ok = true
              else failedAt.put(key, System.currentTimeMillis())
          }
        } catch {
          case NonFatal(t) =>
            failedAt.put(key, System.currentTimeMillis())
            logWarning(s"sparkbloom: bloom indexes of $key not refreshed ($why)", t)
        } finally mine.complete(ok)
      }
      mine
    }

    def await(timeoutMs: Long): Boolean = BackgroundOptimizer.drained(executor, timeoutMs)
  }
}
