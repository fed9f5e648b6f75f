package sparkbloom.write

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

import sparkbloom.BloomConf
import sparkbloom.index.TableFormat

/**
 * What a streaming query's batches wait for: the sink of a table with maintained indexes waits, before its next
 * micro-batch is planned, for the refresh of the batch before ([[beforeStreamingPlan]]), so a lookup reads at most
 * one micro-batch the index does not cover. The refreshes are [[BackgroundMaintenance]]'s; this is what it knows of
 * each streaming query (its sink's table, the batches covered) and of the tables it refreshed.
 */
object StreamingCatchUp extends Logging {
  import BackgroundMaintenance.listenerOf

  /** Waits of streaming batches that ran out of `streamingWaitTimeout` and went on without the refresh. */
  private[sparkbloom] val waitsTimedOut = new java.util.concurrent.atomic.AtomicLong()

  /** Spark's local properties on a streaming query's thread: the query's id, the micro-batch it runs. */
  private[write] val QueryIdKey = "sql.streaming.queryId"
  private[write] val BatchIdKey = "streaming.sql.batchId"

  /** The streaming query and micro-batch this thread runs, if it is a query's thread. */
  private[write] def streamingBatch(session: SparkSession): Option[(String, Long)] = {
    val sc = session.sparkContext
    for {
      query <- Option(sc.getLocalProperty(QueryIdKey))
      batch <- Option(sc.getLocalProperty(BatchIdKey)).flatMap(b => scala.util.Try(b.toLong).toOption)
    } yield (query, batch)
  }

  /** This module's own threads: they never wait for a refresh (it may be queued behind the task they run). */
  private def onMaintenanceThread: Boolean = Thread.currentThread().getName.startsWith("sparkbloom-background-")

  /** Per streaming query (its id): the table its sink writes (learnt from its progress events). */
  private[write] val sinkTables = new java.util.concurrent.ConcurrentHashMap[String, TableFormat.Written]()
  /** Per streaming query: the newest batch whose files a refresh has covered. */
  private[write] val coveredThrough = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Long]()
  /** Per streaming query: the batch last seen planned (a batch plans several queries; it waits at the first). */
  private val planning = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Long]()
  /** Per streaming query: the refresh its newest progress event queued, and that event's batch. */
  private[write] val afterBatch = new java.util.concurrent.ConcurrentHashMap[String,
    (Long, java.util.concurrent.CompletableFuture[java.lang.Boolean])]()
  /** Per table (its key): whether its last refresh found maintained indexes on it. */
  private[write] val indexed = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Boolean]()

  private[write] def covered(query: String, batch: Long): Unit =
    coveredThrough.merge(query, batch, (a: java.lang.Long, b: java.lang.Long) => math.max(a, b))

  private[write] def forget(query: String): Unit = {
    sinkTables.remove(query); coveredThrough.remove(query); planning.remove(query); afterBatch.remove(query)
  }

  /**
   * The sink waits for the refresh, so a lookup reads at most one micro-batch the index does not cover. Called as
   * `session` plans anything (the write rule): on a streaming query's thread, the first plan of batch N of a query
   * whose sink writes a table with maintained indexes (the file sink, Delta's sink; learnt from the query's progress)
   * waits until a refresh that started after batch N-1 committed has run, unless one already has (the refresh its
   * progress event queued). Up to [[BloomConf.streamingWaitTimeoutMs]]; never throws (the stream's interrupt, when it
   * is being stopped, is passed on).
   */
  def beforeStreamingPlan(session: SparkSession): Unit =
    try if (!onMaintenanceThread && BloomConf.maintainOnWrite(session)) streamingBatch(session).foreach {
        case (query, batch) =>
          val seen = planning.put(query, batch)
          val w = sinkTables.get(query)
          // whether the table has maintained indexes: known from its last refresh, else looked up (an index created
          // since; for a table without one, a look at its index directory each batch)
          def hasIndexes: Boolean = indexed.getOrDefault(w.root.toString, false) || {
            val has = MaintainOnWrite.indexNames(session, w.root).nonEmpty
            indexed.put(w.root.toString, has)
            has
          }
          if (batch > 0 && (seen == null || seen.longValue != batch) && w != null &&
            Option(coveredThrough.get(query)).forall(_ < batch - 1) && hasIndexes)
            listenerOf(session).foreach { l =>
              // the refresh batch N-1's progress event queued covers it (queued after its commit): wait for that one
              val queued = Option(afterBatch.get(query)).filter(_._1 >= batch - 1).map(_._2)
              val refreshed = queued.getOrElse {
                val r = l.queue(w, s"before streaming batch $batch", afterLookup = false, session)
                l.whenRefreshed(r, query, batch - 1)
                r
              }
              waitFor(session, w.root.toString, refreshed, s"streaming batch $batch of query $query")
            }
      }
    catch {
      case NonFatal(e) => logWarning("sparkbloom: a streaming batch did not wait for its table's bloom indexes", e)
    }

  /**
   * Waits (up to the streaming timeout) for `refreshed`, the refresh queued as `table` (a table not known to have
   * maintained indexes is waited for once: its refresh is a look at its index directory). Never throws.
   */
  private[write] def waitFor(session: SparkSession, table: String,
                             refreshed: java.util.concurrent.CompletableFuture[java.lang.Boolean], what: String): Unit =
    try {
      val timeout = BloomConf.streamingWaitTimeoutMs(session)
      if (timeout > 0 && !onMaintenanceThread && indexed.getOrDefault(table, true))
        refreshed.get(timeout, java.util.concurrent.TimeUnit.MILLISECONDS)
    } catch {
      case _: InterruptedException => Thread.currentThread().interrupt()
      case _: java.util.concurrent.TimeoutException =>
        waitsTimedOut.incrementAndGet()
        logWarning(s"sparkbloom: $what did not wait longer for the refresh of the bloom indexes of $table")
      case NonFatal(e) => logWarning(s"sparkbloom: $what did not wait for the bloom indexes of $table", e)
    }
}
