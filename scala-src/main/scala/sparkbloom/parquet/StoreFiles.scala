package sparkbloom.parquet

import org.apache.hadoop.fs.{FSDataInputStream, FileSystem, Path}
import org.apache.hadoop.util.functional.FutureIO

/**
 * How sparkbloom opens and writes files where a request is a round trip: what counts as an object store, opening a
 * file whose length is already known (listed, or recorded in the index), and writing a file that is new by
 * construction. One place for the three, used by footer reads, harvests and the index's own files.
 */
object StoreFiles {

  /** An object store (S3A): no directories to make, files appear whole on close, every request a round trip. */
  def objectStore(fs: FileSystem): Boolean = fs.getUri.getScheme == "s3a"

  /** Any file system but the local one: requests cost network round trips, so fewer, larger reads pay. */
  def remote(fs: FileSystem): Boolean = fs.getUri.getScheme != "file"

  /**
   * Opens `file`, whose length is known (listed, or recorded in the index): no HEAD before the first read on S3A
   * (Hadoop 3.3.5 and later read the length option; older ones ignore it and ask the store). `sequential` reads
   * whole files; otherwise the read policy is random (ranged GETs of what is asked for).
   */
  def openListed(fs: FileSystem, file: Path, length: Long, sequential: Boolean): FSDataInputStream =
    FutureIO.awaitFuture(fs.openFile(file)
        .opt("fs.option.openfile.length", length.toString)
        .opt("fs.option.openfile.read.policy", if (sequential) "sequential" else "random")
        .build())

  /**
   * Writes `bytes` to `path` on an object store, a file new by construction (a fresh version directory, a random
   * temporary name): S3A's checks that the path is free (a HEAD and a LIST before the PUT) are skipped (Hadoop
   * 3.3.5+; older ones ignore the option).
   */
  def writeNewOnObjectStore(fs: FileSystem, path: Path, bytes: Array[Byte]): Unit = {
    val out = fs.createFile(path).overwrite(true).opt("fs.s3a.create.performance", "true").build()
    try out.write(bytes)
    finally out.close()
  }

  /** Threads for requests run side by side on a remote store (daemon; idle ones end after a minute). */
  private lazy val io: java.util.concurrent.ExecutorService = {
    val n = new java.util.concurrent.atomic.AtomicInteger()
    new java.util.concurrent.ThreadPoolExecutor(0, Int.MaxValue, 60L, java.util.concurrent.TimeUnit.SECONDS,
      new java.util.concurrent.SynchronousQueue[Runnable](),
      (r: Runnable) => {
        val t = new Thread(r, s"sparkbloom-store-io-${n.incrementAndGet()}"); t.setDaemon(true); t
      })
  }

  /**
   * Every one of `calls` on `fs`, side by side on a remote store (independent requests: one round trip instead of
   * one each), one after another otherwise; their results in order. Every call has ended when this returns; the first
   * failure is then thrown. For requests whose order does not matter: files new by construction, checks.
   */
  def concurrently[A](fs: FileSystem, given: Seq[() => A]): Seq[A] = {
    // strict: on Scala 2.12 a Seq may be a lazy Stream, whose calls would run only when (if ever) their results are
    // asked for
    val calls = given.toVector
    if (calls.size <= 1 || !remote(fs)) calls.map(_())
    else {
      val started = calls.map(c => io.submit(new java.util.concurrent.Callable[A] { def call(): A = c() }))
      started.map { f =>
        scala.util.Try(f.get()).recover { case e: java.util.concurrent.ExecutionException => throw e.getCause }
      }.map(_.get)
    }
  }

  /**
   * `f` on another thread when `fs` is remote (housekeeping a write need not wait for: its requests are round trips),
   * in this one otherwise. `f` must not throw (its failures are its own to log).
   */
  def inBackground(fs: FileSystem)(f: => Unit): Unit =
    if (!remote(fs)) f
    else {
      def ended(): Unit = background.synchronized { background.decrementAndGet(); background.notifyAll() }
      background.incrementAndGet()
      try io.submit(new Runnable {
          def run(): Unit = try f
          finally ended()
        })
      catch { case e: Throwable => ended(); throw e }
    }

  /** Housekeeping [[inBackground]] started that has not ended. */
  private val background = new java.util.concurrent.atomic.AtomicInteger()

  /** Waits up to `timeoutMs` for the housekeeping started in the background to end (tests); whether it has. */
  def awaitBackground(timeoutMs: Long): Boolean = background.synchronized {
    val until = System.currentTimeMillis() + timeoutMs
    while (background.get() > 0 && System.currentTimeMillis() < until)
      background.wait(math.max(1L, until - System.currentTimeMillis()))
    background.get() == 0
  }

  /**
   * When directory `dir` last changed: its own modification time on a file system that keeps one, on an object store
   * (where a directory is a key prefix, not an object: S3A lists one with the time of the listing) the newest of its
   * entries' times, from one listing. None when it cannot be told (no entries, an entry without a time, or a failed
   * listing): whoever deletes old directories keeps such a one, which may be a build still writing.
   */
  def lastModified(fs: FileSystem, dir: org.apache.hadoop.fs.FileStatus): Option[Long] =
    if (!objectStore(fs)) Some(dir.getModificationTime).filter(_ > 0)
    else
      try {
        val times = fs.listStatus(dir.getPath).map(_.getModificationTime)
        if (times.isEmpty || times.contains(0L)) None else Some(times.max)
      } catch { case scala.util.control.NonFatal(_) => None }

  /** `a` and `b`, side by side on a remote store ([[concurrently]]). */
  def both[A, B](fs: FileSystem)(a: => A, b: => B): (A, B) =
    concurrently[Any](fs, Seq(() => a, () => b)) match {
      case Seq(x, y) => (x.asInstanceOf[A], y.asInstanceOf[B])
      case other => throw new IllegalStateException(s"two results expected, got ${other.size}")
    }
}
