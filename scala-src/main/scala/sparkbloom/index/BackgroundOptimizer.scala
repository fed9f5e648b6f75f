package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.slf4j.LoggerFactory

/**
 * The one thread per JVM that runs OPTIMIZE BLOOM INDEX in the background, one index at a time: after the writes that
 * left an index fragmented (maintenance on write) and after a CREATE or REFRESH whose harvested filters miss the
 * index's budget. An index already queued or being optimized is not queued again. A failure is logged: the index
 * stays as it was, and is read as before.
 */
object BackgroundOptimizer {
  private val log = LoggerFactory.getLogger(getClass)

  /** The indexes (their directories) an OPTIMIZE is queued or running for. */
  private val optimizing = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()
  private lazy val executor = java.util.concurrent.Executors.newSingleThreadExecutor { (r: Runnable) =>
    val t = new Thread(r, "sparkbloom-background-optimize")
    t.setDaemon(true)
    t
  }

  /**
   * Runs `optimize` on the background thread with `session` active, unless one is queued or running for the index at
   * `indexDir`; `what` names it in the log.
   */
  def submit(session: SparkSession, indexDir: String, what: String)(optimize: => Unit): Unit =
    if (optimizing.add(indexDir)) executor.execute { () =>
      try {
        SparkSession.setActiveSession(session)
        log.info(s"sparkbloom: optimizing $what in the background")
        optimize
      } catch {
        case NonFatal(t) => log.warn(s"sparkbloom: $what not optimized", t)
      } finally optimizing.remove(indexDir)
    }

  /** Whether every OPTIMIZE queued so far has run within `timeoutMs` (tests, benchmarks). */
  def drained(timeoutMs: Long): Boolean = drained(executor, timeoutMs)

  /** Whether every task `executor` was given so far has run within `timeoutMs`. */
  def drained(executor: java.util.concurrent.ExecutorService, timeoutMs: Long): Boolean = {
    val done = new java.util.concurrent.CountDownLatch(1)
    executor.execute(() => done.countDown())
    done.await(math.max(0L, timeoutMs), java.util.concurrent.TimeUnit.MILLISECONDS)
  }
}
