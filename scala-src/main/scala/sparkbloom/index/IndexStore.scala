package sparkbloom.index

import java.nio.charset.StandardCharsets
import java.util.zip.CRC32

import scala.collection.mutable
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{DeserializationFeature, ObjectMapper}
import com.fasterxml.jackson.module.scala.DefaultScalaModule
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.slf4j.LoggerFactory

import sparkbloom.index.sliced.{IndexCache, Layout, LayoutCodec, RunReader}
import sparkbloom.parquet.StoreFiles

/**
 * Where indexes live and how versions become visible.
 *
 * {{{
 *   <table root>/_sparkbloom/<name>/                (or <spark.sparkbloom.index.root>/<table hash>/<name>/)
 *     v<N>-<uuid>/layout.bin                        version N's row groups and where their filters are (Layout)
 *     v<N>-<uuid>/p<task>-c<col>-b<blocks>-<n>.seg  filters, block-sliced (Segment); a later version may
 *                                                   keep referencing them (IndexMeta.referencedDirs)
 *     v<N>-<uuid>/part-*.parquet                    format 1 (before block slicing): one row per entry
 *     _commits/<N>.json                             IndexMeta of version N: the commit
 * }}}
 *
 * A build writes its entries into a fresh directory and then publishes `_commits/<N>.json` in one atomic
 * step that fails if N already exists ([[CommitStore]]: a hard link on local file systems, a conditional PUT on S3,
 * rename-without-overwrite elsewhere). Readers use the highest commit whose data loads. An interrupted build leaves
 * only an unreferenced directory; two concurrent writers of N: one wins, the other gets a clear error.
 */
object IndexStore {
  private val log = LoggerFactory.getLogger(getClass)
  val DirName = "_sparkbloom"
  private val CommitsDir = "_commits"

  val mapper: ObjectMapper = new ObjectMapper().registerModule(DefaultScalaModule)
    .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)

  /** Directory holding all indexes of the table rooted at `tableRoot`. */
  def indexesDir(tableRoot: Path, indexRoot: Option[String]): Path = indexRoot match {
    case Some(r) =>
      val md =
        java.security.MessageDigest.getInstance("SHA-1").digest(tableRoot.toString.getBytes(StandardCharsets.UTF_8))
      new Path(new Path(r), md.take(10).map("%02x".format(_)).mkString)
    case None => new Path(tableRoot, DirName)
  }

  def validName(name: String): Boolean = name.matches("[A-Za-z_][A-Za-z0-9_]{0,127}")

  /** Committed version numbers of an index, highest first. */
  def versions(fs: FileSystem, indexDir: Path): Seq[Long] = commits(fs, indexDir).map(_._1)

  /** Committed versions, highest first, with the length of each commit file. */
  private def commits(fs: FileSystem, indexDir: Path): Seq[(Long, Long)] =
    commitFiles(fs, indexDir).map { case (v, st) => v -> st.getLen }

  /** Committed versions, highest first, with when each was committed (its commit file's modification time). */
  def commitTimes(fs: FileSystem, indexDir: Path): Seq[(Long, Long)] =
    commitFiles(fs, indexDir).map { case (v, st) => v -> st.getModificationTime }

  private def commitFiles(fs: FileSystem, indexDir: Path): Seq[(Long, org.apache.hadoop.fs.FileStatus)] = {
    val dir = new Path(indexDir, CommitsDir)
    // listed without asking first whether it exists (on S3A that is a HEAD and a LIST more)
    val listed = try fs.listStatus(dir).toSeq
    catch { case _: java.io.FileNotFoundException => Nil }
    listed.flatMap(st => commitVersion(st.getPath.getName).map(_ -> st)).sortBy(-_._1)
  }

  /** The version a file in `_commits/` commits (`<N>.json`), if it is a commit's name. */
  private def commitVersion(name: String): Option[Long] =
    if (name.endsWith(".json") && name.length > 5 && name.dropRight(5).forall(_.isDigit)) Some(name.dropRight(5).toLong)
    else None

  /** Version `version`'s commit (tests call it through py4j, which knows no default arguments). */
  def readMeta(fs: FileSystem, indexDir: Path, version: Long): IndexMeta = readMeta(fs, indexDir, version, -1L)

  /** Version `version`'s commit; `length` (≥ 0), when the listing gave it, spares a HEAD on object stores. */
  def readMeta(fs: FileSystem, indexDir: Path, version: Long, length: Long): IndexMeta = {
    val file = new Path(new Path(indexDir, CommitsDir), s"$version.json")
    val in = if (length >= 0) StoreFiles.openListed(fs, file, length, sequential = true) else fs.open(file)
    try mapper.readValue(in: java.io.InputStream, classOf[IndexMeta])
    finally in.close()
  }

  /** The newest readable commit's metadata, with the problems met on the way. */
  def latestMeta(fs: FileSystem, indexDir: Path): (Option[IndexMeta], Seq[String]) =
    latestOf(fs, indexDir, commits(fs, indexDir))

  /**
   * [[latestMeta]] and the committed versions, highest first ([[versions]]), from one listing of the commits (on an
   * object store a listing of a missing directory is three requests: CREATE asks both of an index not there yet).
   */
  def latestMetaAndVersions(fs: FileSystem, indexDir: Path): (Option[IndexMeta], Seq[String], Seq[Long]) = {
    val listed = commits(fs, indexDir)
    val (meta, problems) = latestOf(fs, indexDir, listed)
    (meta, problems, listed.map(_._1))
  }

  private def latestOf(fs: FileSystem, indexDir: Path, listed: Seq[(Long, Long)]): (Option[IndexMeta], Seq[String]) = {
    val problems = mutable.Buffer[String]()
    for ((v, length) <- listed) {
      try {
        val m = readMeta(fs, indexDir, v, length)
        if (m.version != v) throw new IllegalStateException(s"commit $v claims version ${m.version}")
        return (Some(m), problems.toSeq)
      } catch { case NonFatal(e) => problems += s"commit $v of ${indexDir.getName} is unreadable: ${e.getMessage}" }
    }
    (None, problems.toSeq)
  }

  // ---- lookups: the indexes of a table and their newest commits, remembered ----
  //
  // On an object store every request waits tens of milliseconds, and finding an index's newest commit is a LIST of
  // `_commits/` and a GET. A lookup remembers what it found: the index directories of a table root for up to
  // `ttlMs` (a new index another application creates is seen within that), and each index's newest commit, checked
  // before every use with one request, an open of the next version's commit (`_commits/<N+1>.json`: S3A's open is
  // one HEAD), and read again in full once `ttlMs` has passed since it was last listed. This JVM's own commits and
  // drops update both at once. Remembering is safe whatever another writer did meanwhile: an older version covers
  // fewer files, never the wrong ones (files it does not cover are read), and a version whose files were vacuumed
  // reads as damaged (its row groups are read) and is listed again at the next lookup. `ttlMs` 0: listed every time.

  private final case class Remembered[T](value: T, listedAt: Long, checkedAt: Long = 0L)

  /**
   * A newest commit checked this recently is used without checking again: one statement (a write and its index
   * update, a query with several scans) asks several times within milliseconds, and a commit another application
   * made in the last second counts as made after the statement started.
   */
  val FreshForMs = 1000L
  private val indexDirsSeen = new java.util.concurrent.ConcurrentHashMap[String, Remembered[Seq[Path]]]()
  private val newestSeen = new java.util.concurrent.ConcurrentHashMap[String, Remembered[IndexMeta]]()

  /**
   * Each index's commits as the last flat listing of its table's indexes found them (below), for the lookup of its
   * newest commit that follows within [[FreshForMs]]; taken once.
   */
  private val commitsListed = new java.util.concurrent.ConcurrentHashMap[String, Remembered[Seq[(Long, Long)]]]()
  /** Per table's `_sparkbloom/`: the keys its last flat listing returned and the index directories in them. */
  private val flatListed = new java.util.concurrent.ConcurrentHashMap[String, (Int, Int)]()
  /** Keys in one page of an S3 listing (ListObjectsV2's most). */
  val ListingPageKeys = 1000

  /** The index directories under `base` (a table's `_sparkbloom/`); none when it does not exist. */
  def indexDirs(fs: FileSystem, base: Path, ttlMs: Long): Seq[Path] = {
    val now = System.currentTimeMillis()
    Option(indexDirsSeen.get(base.toString)).filter(r => ttlMs > 0 && now - r.listedAt < ttlMs).map(_.value)
      .getOrElse {
        val dirs = flatListing(fs, base, now).getOrElse(
          try fs.listStatus(base).toSeq.filter(_.isDirectory).map(_.getPath)
          catch { case _: java.io.FileNotFoundException => Nil })
        if (ttlMs > 0) indexDirsSeen.put(base.toString, Remembered(dirs, now))
        dirs
      }
  }

  /**
   * On S3A: the index directories under `base` and each one's commits, from one flat listing of every key under
   * `base` (S3A's recursive `listFiles`: a LIST without a delimiter, a thousand keys a page). A listing by
   * directories is a LIST of `base` and then one of each index's `_commits/` for its newest commit; the flat one
   * answers both, in one request while the indexes hold fewer than a thousand keys (a few per version, old versions
   * cleaned every 8 commits). Where the last flat listing of `base` took more pages than the listing by directories
   * would have made requests, None: the caller lists by directories. Also None on any error but a missing `base`.
   */
  private def flatListing(fs: FileSystem, base: Path, now: Long): Option[Seq[Path]] = {
    val pages = Option(flatListed.get(base.toString))
      .map { case (keys, dirs) => (keys + ListingPageKeys - 1) / ListingPageKeys <= 1 + dirs }
    if (fs.getScheme != "s3a" || pages.contains(false)) return None
    try {
      val basePath = fs.makeQualified(base)
      val prefix = basePath.toUri.getPath.stripSuffix("/") + "/"
      val commits = mutable.LinkedHashMap[String, mutable.Buffer[(Long, Long)]]()
      var keys = 0
      val it = fs.listFiles(basePath, true)
      while (it.hasNext) {
        val st = it.next()
        keys += 1
        val rel = st.getPath.toUri.getPath.stripPrefix(prefix).split('/')
        if (rel.length >= 2 && rel(0).nonEmpty) {
          val found = commits.getOrElseUpdate(rel(0), mutable.Buffer())
          if (rel.length == 3 && rel(1) == CommitsDir) commitVersion(rel(2)).foreach(v => found += v -> st.getLen)
        }
      }
      flatListed.put(base.toString, (keys, commits.size))
      Some(commits.toSeq.map { case (name, found) =>
        val dir = new Path(basePath, name)
        commitsListed.put(dir.toString, Remembered(found.toSeq.sortBy(-_._1), now))
        dir
      })
    } catch {
      case _: java.io.FileNotFoundException => Some(Nil)
      case NonFatal(e) => log.warn(s"sparkbloom: flat listing of $base failed, listing by directories: $e"); None
    }
  }

  /** The newest readable commit of `indexDir` for a lookup, with the problems met when it was listed. */
  def newestForLookup(fs: FileSystem, indexDir: Path, ttlMs: Long): (Option[IndexMeta], Seq[String]) = {
    val now = System.currentTimeMillis()
    Option(newestSeen.get(indexDir.toString)) match {
      case Some(r)
          if ttlMs > 0 && now - r.listedAt < ttlMs &&
            (now - r.checkedAt < FreshForMs || !committed(fs, indexDir, r.value.version + 1)) =>
        if (now - r.checkedAt >= FreshForMs) newestSeen.replace(indexDir.toString, r, r.copy(checkedAt = now))
        (Some(r.value), Nil)
      case _ =>
        // the commits a flat listing of the table's indexes just found, or a listing of them
        val found = Option(commitsListed.remove(indexDir.toString)).filter(r => now - r.listedAt < FreshForMs)
          .map(r => latestOf(fs, indexDir, r.value)).getOrElse(latestMeta(fs, indexDir))
        found._1 match {
          case Some(m) if ttlMs > 0 => newestSeen.put(indexDir.toString, Remembered(m, now, now))
          case _ => newestSeen.remove(indexDir.toString)
        }
        found
    }
  }

  /** Whether version `version`'s commit may exist (true when that cannot be told: the caller lists then). */
  private def committed(fs: FileSystem, indexDir: Path, version: Long): Boolean =
    try fileExists(fs, new Path(new Path(indexDir, CommitsDir), s"$version.json"))
    catch { case NonFatal(_) => true }

  /** Forgets what lookups remember of `indexDir` and of its table's list of indexes (a drop, a vacuum, damage). */
  def forget(indexDir: Path): Unit = {
    newestSeen.remove(indexDir.toString)
    commitsListed.remove(indexDir.toString)
    indexDirsSeen.remove(indexDir.getParent.toString)
  }

  /** Everything lookups remember, and every loaded version and run (benchmarks: a cold lookup). */
  def clearCaches(): Unit = {
    newestSeen.clear(); indexDirsSeen.clear(); commitsListed.clear(); flatListed.clear(); IndexCache.clear()
  }

  /**
   * Publishes a version through the store's [[CommitStore]]; fails with [[ConcurrentIndexUpdateException]] if it was
   * published by another writer.
   */
  def commit(fs: FileSystem, conf: Configuration, indexDir: Path, meta: IndexMeta): Unit = {
    val dir = new Path(indexDir, CommitsDir)
    mkdirs(fs, dir)
    val target = new Path(dir, s"${meta.version}.json")
    val won = CommitStore.of(fs).publishIfAbsent(fs, conf, target, mapper.writeValueAsBytes(meta))
    if (won) {
      published.incrementAndGet()
      // lookups in this JVM see the new version (and a new index) at once
      val now = System.currentTimeMillis()
      newestSeen.put(indexDir.toString, Remembered(meta, now, now))
      commitsListed.remove(indexDir.toString)
      // the table's list of indexes as remembered stays right unless this commit made a new index (the next write
      // into the table then need not list it again)
      val parent = indexDir.getParent.toString
      Option(indexDirsSeen.get(parent)).filterNot(_.value.exists(_.toString == indexDir.toString))
        .foreach(indexDirsSeen.remove(parent, _))
    } else {
      forget(indexDir) // the next attempt lists the commits again
      throw new ConcurrentIndexUpdateException(s"bloom index ${meta.name} was updated concurrently: version " +
        s"${meta.version} was committed by another writer; nothing was changed by this one, retry the statement")
    }
  }

  /** Versions this JVM published, each one it was told it won (the racing-writers test counts lost ones). */
  val published = new java.util.concurrent.atomic.AtomicLong()

  /** Removes version `version`'s commit (VACUUM BLOOM INDEX). */
  def deleteCommit(fs: FileSystem, indexDir: Path, version: Long): Unit = {
    forget(indexDir)
    fs.delete(new Path(new Path(indexDir, CommitsDir), s"$version.json"), false)
  }

  /**
   * Removes superseded versions' commits (housekeeping: never the newest, which is all lookups read; what they
   * remember stays right, as a commit read before stays a true version).
   */
  def deleteSupersededCommits(fs: FileSystem, indexDir: Path, oldestFirst: Seq[Long]): Unit =
    // one after another, oldest first, stopping at the first failure: the removed commits stay a prefix of the
    // history, which [[previousCommitted]] relies on (housekeeping runs after the write returns on a remote store)
    oldestFirst.foreach(v => fs.delete(new Path(new Path(indexDir, CommitsDir), s"$v.json"), false))

  /**
   * Whether the commit of the version before `version` is there (none to check for version 1; true when the check
   * fails: the conditional PUT then decides, as before commits were removed).
   */
  def previousCommitted(fs: FileSystem, indexDir: Path, version: Long): Boolean =
    version <= 1 ||
      (try fileExists(fs, new Path(new Path(indexDir, CommitsDir), s"${version - 1}.json"))
      catch { case NonFatal(_) => true })

  // ---- loading: the layout of a version, cached in IndexCache (keyed by the version's own files) ----

  /** Layouts up to this size are read whole, in one request, from an object store. */
  val WholeLayoutMax: Long = 4L << 20

  /** The name of a version's layout file inside its data directory. */
  val LayoutFile = "layout.bin"

  private def cacheKey(indexDir: Path, meta: IndexMeta) = s"$indexDir@${meta.version}@${meta.dataDir}"

  /** A version just committed from `layout` in memory: loading it reads nothing (the writer's next write). */
  def cacheCommitted(indexDir: Path, meta: IndexMeta, layout: Layout): Unit =
    IndexCache.put(cacheKey(indexDir, meta), IndexVersion(meta, indexDir, layout, Map.empty, Nil),
      layout.approximateBytes)

  def load(fs: FileSystem, conf: Configuration, indexDir: Path, meta: IndexMeta): IndexVersion = {
    val key = cacheKey(indexDir, meta)
    IndexCache.get[IndexVersion](key).getOrElse {
      val v = if (meta.formatVersion.getOrElse(1) >= 2) loadSliced(fs, indexDir, meta)
      else LegacyIndex.load(fs, conf, indexDir, meta)
      IndexCache.put(key, v, v.layout.approximateBytes + v.memorySegments.valuesIterator.map(_.length.toLong).sum)
      v
    }
  }

  def invalidate(indexDir: Path): Unit = { forget(indexDir); IndexCache.invalidatePrefix(indexDir.toString + "@") }

  private def loadSliced(fs: FileSystem, indexDir: Path, meta: IndexMeta): IndexVersion = {
    val file = new Path(new Path(indexDir, meta.dataDir), LayoutFile)
    try {
      val raw = RunReader.withoutChecksumFiles(fs)
      // the commit says how long the layout is (commits before it did not: asked of the store)
      val length = meta.layoutBytes.getOrElse(raw.getFileStatus(file).getLen)
      // Planning reads the layout's core only (LayoutCodec); its stats are read again on first use.
      val ranged = (offset: Long, n: Int) => {
        val in = StoreFiles.openListed(raw, file, length, sequential = false) // the length is known: no HEAD
        try { val b = new Array[Byte](n); in.readFully(offset, b); b }
        finally in.close()
      }
      // On an object store a small layout is one GET (its trailer, core and stats), not two or three
      val layout = if (StoreFiles.objectStore(raw) && length <= WholeLayoutMax) {
        val all = ranged(0L, length.toInt)
        LayoutCodec.load(length, (offset, n) => java.util.Arrays.copyOfRange(all, offset.toInt, offset.toInt + n))
      } else LayoutCodec.load(length, ranged)
      val problems = mutable.Buffer[String]()
      if (layout.numRowGroups * layout.columns.length.toLong != meta.entries)
        problems +=
          s"index version ${meta.version} holds ${layout.numRowGroups * layout.columns.length} entries, its commit " +
            s"says ${meta.entries}"
      // Segments must be there and have their length; anything else in the version's directory is ignored.
      val stored = layout.segments ++ layout.summaries.segments
      val expected = stored.map(s => s.file -> s.fileLength).toMap
      // each directory listed once (the version's own is listed for unexpected files below)
      val listings = (stored.map(_.file.takeWhile(_ != '/')) :+ meta.dataDir).distinct.map { d =>
        d ->
          (try Some(fs.listStatus(new Path(indexDir, d)).toSeq)
          catch { case NonFatal(_) => None })
      }.toMap
      val present = listings.toSeq.flatMap { case (d, sts) =>
        sts.getOrElse(Nil).map(st => s"$d/${st.getPath.getName}" -> st.getLen)
      }.toMap
      val damaged = expected.collect {
        case (f, len) if !present.contains(f) =>
          problems += s"index segment $f is missing: the row groups it covers are read"; f
        case (f, len) if present(f) != len =>
          problems += s"index segment $f has ${present(f)} bytes, not $len: the row groups it covers are read"; f
      }.toSet
      listings(meta.dataDir).getOrElse(Nil).map(st => s"${meta.dataDir}/${st.getPath.getName}")
        .filterNot(f => expected.contains(f) || f.endsWith("/" + LayoutFile))
        .foreach(f => problems += s"unexpected file $f in the index is ignored")
      IndexVersion(meta, indexDir, layout, Map.empty, problems.toSeq, damaged)
    } catch {
      case NonFatal(e) =>
        val what = if (e.isInstanceOf[java.io.FileNotFoundException]) "is missing" else "is unreadable"
        val problem =
          s"index layout ${meta.dataDir}/$LayoutFile $what (${e.getClass.getSimpleName}: ${e.getMessage}); every " +
            "file is read"
        log.warn(s"bloom index ${meta.name} ($indexDir): $problem")
        IndexVersion(meta, indexDir, Layout.empty(meta.columns.map(_.name)), Map.empty, Seq(problem))
    }
  }

  /**
   * Reads every run of every stored segment of `v` and checks its CRC (DESCRIBE BLOOM INDEX does, for
   * indexes that fit the cache): the damage found, plus what probes found before.
   */
  def verify(fs: FileSystem, v: IndexVersion): Seq[String] = {
    val stored = v.layout.segments.toSeq ++ v.layout.summaries.segments
    val found = if (stored.iterator.map(_.fileLength).sum > IndexCache.limit) Nil
    else stored.filterNot(s =>
      v.memorySegments.contains(s.file) || v.damaged.contains(s.file)).flatMap { s =>
      val runs = RunReader.read(fs, new Path(v.dir, s.file), s, 0 until s.blocks)
      val bad = runs.count(_._2.isEmpty)
      if (bad == 0) None
      else Some(s"index segment ${s.file}: $bad of ${s.blocks} runs fail their CRC: the row groups it covers are read")
    }
    (found ++ v.layout.statsDamage().toSeq ++ IndexCache.damageOf(v.dir)).distinct
  }

  /** Writes a version's layout into its data directory; its length. */
  def writeLayout(fs: FileSystem, indexDir: Path, dataDir: String, layout: Layout): Long = {
    val bytes = LayoutCodec.encode(layout)
    writeNew(fs, new Path(new Path(indexDir, dataDir), LayoutFile), bytes)
    bytes.length.toLong
  }

  /**
   * Writes a file that must not exist yet. On the local file system through java.nio: Hadoop's local file system
   * (without its native library) forks a `chmod` for every file and `.crc` side file it creates, which costs more
   * than the write (maintenance on write commits a version per write). Index files carry their own CRCs.
   */
  def writeNew(fs: FileSystem, path: Path, bytes: Array[Byte]): Unit = fs match {
    case l: org.apache.hadoop.fs.LocalFileSystem =>
      java.nio.file.Files.write(l.pathToFile(path).toPath, bytes, java.nio.file.StandardOpenOption.CREATE_NEW,
        java.nio.file.StandardOpenOption.WRITE)
    case _ if StoreFiles.objectStore(fs) => StoreFiles.writeNewOnObjectStore(fs, path, bytes)
    case _ =>
      val out = fs.create(path, false)
      try out.write(bytes)
      finally out.close()
  }

  /**
   * Whether `file` exists, asked with one request on an object store (S3A's open is a HEAD; `exists` adds a LIST
   * when the file is not there, for a directory of that name).
   */
  def fileExists(fs: FileSystem, file: Path): Boolean =
    try { fs.open(file).close(); true }
    catch { case _: java.io.FileNotFoundException => false }

  /** `fs.mkdirs`, without forking `chmod` on the local file system (see [[writeNew]]). */
  def mkdirs(fs: FileSystem, dir: Path): Unit = fs match {
    case l: org.apache.hadoop.fs.LocalFileSystem => java.nio.file.Files.createDirectories(l.pathToFile(dir).toPath)
    // nothing to make on an object store: a directory is a key prefix, and S3A's mkdirs costs requests
    case _ if StoreFiles.objectStore(fs) =>
    case _ => fs.mkdirs(dir)
  }

  def crc32(bytes: Array[Byte]): Long = { val c = new CRC32(); c.update(bytes); c.getValue }
}

class ConcurrentIndexUpdateException(msg: String) extends BloomIndexException(msg)
