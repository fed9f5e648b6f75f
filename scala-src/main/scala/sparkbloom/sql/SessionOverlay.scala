package sparkbloom.sql

import scala.collection.mutable

import org.apache.spark.sql.internal.SQLConf

/**
 * Settings laid over a session's SQL configuration while a block runs, then taken off again: how a write whose
 * writer reads its Parquet settings from the session (Delta's) is asked to write bloom filters.
 *
 * - A key the session already has (set by the user, or by anything else) is never touched, nor its value changed.
 * - Concurrent blocks on one session share a key by reference count: the first sets it, the last takes it off, and
 *   only if it still holds the value laid (a user who set it meanwhile keeps theirs).
 * - Other statements of the same session that run meanwhile see the keys too. The keys this is used for only ask
 *   parquet-java to add bloom filters to the files it writes: their data is the same.
 */
private[sql] object SessionOverlay {
  /** Per configuration (by identity): each key laid, with its value and how many blocks hold it. */
  private val held = new java.util.IdentityHashMap[SQLConf, mutable.Map[String, (String, Int)]]()

  /** `body`, with `settings` laid over `conf` for its duration. */
  def during[T](conf: SQLConf, settings: Seq[(String, String)])(body: => T): T = {
    val mine = if (settings.isEmpty) Nil else lay(conf, settings)
    try body
    finally if (mine.nonEmpty) lift(conf, mine)
  }

  /** The keys of `settings` this call holds: those it set, or that another block had set. */
  private def lay(conf: SQLConf, settings: Seq[(String, String)]): Seq[String] = held.synchronized {
    val laid = Option(held.get(conf)).getOrElse(mutable.Map.empty[String, (String, Int)])
    val mine = settings.flatMap { case (k, v) =>
      laid.get(k) match {
        case Some((value, n)) => laid(k) = (value, n + 1); Some(k)
        case None if conf.contains(k) => None
        case None => conf.setConfString(k, v); laid(k) = (v, 1); Some(k)
      }
    }
    if (laid.nonEmpty) held.put(conf, laid)
    mine
  }

  private def lift(conf: SQLConf, keys: Seq[String]): Unit = held.synchronized {
    Option(held.get(conf)).foreach { laid =>
      keys.foreach { k =>
        laid.get(k).foreach { case (value, n) =>
          if (n > 1) laid(k) = (value, n - 1)
          else {
            laid.remove(k)
            if (conf.getConfString(k, null) == value) conf.unsetConf(k)
          }
        }
      }
      if (laid.isEmpty) held.remove(conf)
    }
  }

  /** The keys laid over `conf` now (for tests). */
  private[sparkbloom] def laidOver(conf: SQLConf): Set[String] =
    held.synchronized(Option(held.get(conf)).map(_.keySet.toSet).getOrElse(Set.empty))
}
