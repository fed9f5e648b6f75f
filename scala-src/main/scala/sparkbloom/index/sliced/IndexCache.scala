package sparkbloom.index.sliced

import java.util.zip.CRC32

import org.apache.hadoop.fs.{FileSystem, Path}

import sparkbloom.parquet.StoreFiles

/**
 * The driver's memory for indexes: one LRU, bounded in bytes (`spark.sparkbloom.cache.maxBytes`), of index
 * layouts and of runs. Keys name immutable files (a version's layout, a segment's run), so an entry never
 * goes stale; a new version simply uses new keys.
 */
object IndexCache {
  @volatile private var maxBytes: Long = 176L << 20
  private var used = 0L
  private final case class Entry(value: AnyRef, bytes: Long)
  private val entries = new java.util.LinkedHashMap[String, Entry](1024, 0.75f, true)
  @volatile var runBytesRead = 0L // for benchmarks and metrics: bytes of runs read from storage

  def setMaxBytes(n: Long): Unit = synchronized { maxBytes = math.max(0L, n); evict() }
  def limit: Long = maxBytes
  def usedBytes: Long = synchronized(used)
  def clear(): Unit = synchronized { entries.clear(); used = 0 }
  def contains(key: String): Boolean = synchronized(entries.containsKey(key))

  def get[T <: AnyRef](key: String): Option[T] = synchronized(Option(entries.get(key)).map(_.value.asInstanceOf[T]))

  def put(key: String, value: AnyRef, bytes: Long): Unit = synchronized {
    Option(entries.put(key, Entry(value, bytes))).foreach(old => used -= old.bytes)
    used += bytes
    evict()
  }

  def invalidatePrefix(prefix: String): Unit = synchronized {
    val it = entries.entrySet().iterator()
    while (it.hasNext) { val e = it.next(); if (e.getKey.startsWith(prefix)) { used -= e.getValue.bytes; it.remove() } }
  }

  /**
   * Least recently used first, runs and remembered listings (keys with '#') before layouts: every lookup
   * needs its layout, while a run serves only the values hashing to its block, so a lookup that reads many
   * runs (a long IN list) never pushes out the layout it and the next lookup need.
   */
  private def evict(): Unit = {
    if (used <= maxBytes) return
    val runs = entries.entrySet().iterator()
    while (used > maxBytes && runs.hasNext) {
      val e = runs.next()
      if (e.getKey.indexOf('#') >= 0) { used -= e.getValue.bytes; runs.remove() }
    }
    val rest = entries.values().iterator()
    while (used > maxBytes && rest.hasNext) { used -= rest.next().bytes; rest.remove() }
  }

  def runKey(indexDir: Path, seg: Segment, block: Int): String = s"$indexDir/${seg.file}#$block"

  // Damage probes met (a run failing its CRC), per index directory, for DESCRIBE. Bounded: a few per index.
  private val damage = new java.util.concurrent.ConcurrentHashMap[String, java.util.Set[String]]()
  def reportDamage(indexDir: Path, problem: String): Unit = {
    val set = damage.computeIfAbsent(indexDir.toString, _ => java.util.concurrent.ConcurrentHashMap.newKeySet[String]())
    if (set.size < 16) set.add(problem)
  }
  def damageOf(indexDir: Path): Seq[String] =
    Option(damage.get(indexDir.toString)).map(s => {
      import scala.jdk.CollectionConverters._; s.asScala.toSeq.sorted
    }).getOrElse(Nil)

  /**
   * The runs `blocks` of one segment, cached ones from memory and the others with one positioned read each;
   * a run whose CRC does not match (or that cannot be read) is None: its filters are then unusable.
   */
  def runs(fs: FileSystem, indexDir: Path, seg: Segment, blocks: Seq[Int]): Map[Int, Option[Array[Byte]]] = {
    val cached = blocks.map(b => b -> get[Array[Byte]](runKey(indexDir, seg, b))).toMap
    val missing = blocks.filter(b => cached(b).isEmpty)
    val file = new Path(indexDir, seg.file)
    val read = if (missing.isEmpty) Map.empty[Int, Option[Array[Byte]]]
    else if (RunReader.wholeSegment(fs, seg, maxBytes)) {
      // One request for the whole (small) segment: every other run is remembered for the next lookups.
      val all = RunReader.readWhole(fs, file, seg)
      all.foreach {
        case (b, Some(bytes)) if !missing.contains(b) => put(runKey(indexDir, seg, b), bytes, bytes.length + 64L)
        case _ =>
      }
      missing.map(b => b -> all.getOrElse(b, None)).toMap
    } else RunReader.read(fs, file, seg, missing)
    read.foreach {
      case (b, Some(bytes)) => runBytesRead += bytes.length; put(runKey(indexDir, seg, b), bytes, bytes.length + 64L)
      case (b, None) => reportDamage(indexDir,
          s"index segment ${seg.file}: run $b fails its CRC or cannot be read: the row groups it covers are read")
    }
    blocks.map(b => b -> cached(b).map(Some(_)).getOrElse(read(b))).toMap
  }
}

/** Positioned reads of runs, with their CRCs checked. Used on the driver and in distributed probes. */
object RunReader {
  /**
   * `fs` without Hadoop's checksummed local wrapper, which would also read a `.crc` side file: segments and
   * `layout.bin` carry their own CRC32s.
   */
  def withoutChecksumFiles(fs: FileSystem): FileSystem = fs match {
    case c: org.apache.hadoop.fs.ChecksumFileSystem => c.getRawFileSystem
    case other => other
  }

  def read(fs: FileSystem, file: Path, seg: Segment, blocks: Seq[Int]): Map[Int, Option[Array[Byte]]] = {
    val in = try StoreFiles.openListed(fs, file, seg.fileLength, sequential = false)
    catch { case _: java.io.IOException => return blocks.map(_ -> None).toMap }
    try blocks.distinct.map { b =>
        b ->
          (try {
            val buf = new Array[Byte](seg.runBytes + 4)
            in.readFully(seg.runOffset(b), buf)
            checked(buf, 0, seg)
          } catch { case _: java.io.IOException => None })
      }.toMap
    finally in.close()
  }

  /** Run `buf[from, from + runBytes + 4)` if its CRC matches (the probe ignores the 4 trailing CRC bytes). */
  private def checked(buf: Array[Byte], from: Int, seg: Segment): Option[Array[Byte]] = {
    val n = seg.runBytes
    val crc = new CRC32(); crc.update(buf, from, n)
    val stored = (buf(from + n) & 0xff) | (buf(from + n + 1) & 0xff) << 8 |
      (buf(from + n + 2) & 0xff) << 16 | (buf(from + n + 3) & 0xff) << 24
    if (crc.getValue.toInt != stored) None
    else if (from == 0 && buf.length == n + 4) Some(buf)
    else Some(java.util.Arrays.copyOfRange(buf, from, from + n + 4))
  }

  /**
   * Segments up to this size are read whole from object stores (and other remote file systems): a request costs
   * tens of milliseconds there whether it returns 32 bytes or a megabyte, so the first lookup of a segment reads
   * all its runs and later lookups of other values read nothing.
   */
  val WholeSegmentMax: Long = 1L << 20

  def wholeSegment(fs: FileSystem, seg: Segment, cacheBytes: Long): Boolean =
    seg.fileLength <= WholeSegmentMax && seg.fileLength * 8 <= cacheBytes && StoreFiles.remote(fs)

  /** Every run of `seg`, read in one request; a run failing its CRC (or all, if the read fails) is None. */
  def readWhole(fs: FileSystem, file: Path, seg: Segment): Map[Int, Option[Array[Byte]]] =
    try {
      val buf = new Array[Byte](seg.fileLength.toInt)
      val in = StoreFiles.openListed(fs, file, seg.fileLength, sequential = true)
      try in.readFully(0L, buf)
      finally in.close()
      (0 until seg.blocks).map(b => b -> checked(buf, seg.runOffset(b).toInt, seg)).toMap
    } catch { case _: java.io.IOException => (0 until seg.blocks).map(_ -> None).toMap }
}
