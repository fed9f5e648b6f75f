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
  def versions(fs: FileSystem, indexDir: Path): Seq[Long] = {
    val dir = new Path(indexDir, CommitsDir)
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.map(_.getPath.getName).collect {
      case n if n.endsWith(".json") && n.dropRight(5).forall(_.isDigit) && n.length > 5 => n.dropRight(5).toLong
    }.sorted.reverse
  }

  def readMeta(fs: FileSystem, indexDir: Path, version: Long): IndexMeta = {
    val in = fs.open(new Path(new Path(indexDir, CommitsDir), s"$version.json"))
    try mapper.readValue(in: java.io.InputStream, classOf[IndexMeta])
    finally in.close()
  }

  /** The newest readable commit's metadata, with the problems met on the way. */
  def latestMeta(fs: FileSystem, indexDir: Path): (Option[IndexMeta], Seq[String]) = {
    val problems = mutable.Buffer[String]()
    for (v <- versions(fs, indexDir)) {
      try {
        val m = readMeta(fs, indexDir, v)
        if (m.version != v) throw new IllegalStateException(s"commit $v claims version ${m.version}")
        return (Some(m), problems.toSeq)
      } catch { case NonFatal(e) => problems += s"commit $v of ${indexDir.getName} is unreadable: ${e.getMessage}" }
    }
    (None, problems.toSeq)
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
    if (won) published.incrementAndGet()
    else throw new ConcurrentIndexUpdateException(s"bloom index ${meta.name} was updated concurrently: version " +
      s"${meta.version} was committed by another writer; nothing was changed by this one, retry the statement")
  }

  /** Versions this JVM published, each one it was told it won (the racing-writers test counts lost ones). */
  val published = new java.util.concurrent.atomic.AtomicLong()

  /** Removes version `version`'s commit (VACUUM BLOOM INDEX). */
  def deleteCommit(fs: FileSystem, indexDir: Path, version: Long): Unit =
    fs.delete(new Path(new Path(indexDir, CommitsDir), s"$version.json"), false)

  // ---- loading: the layout of a version, cached in IndexCache (keyed by the version's own files) ----

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

  def invalidate(indexDir: Path): Unit = IndexCache.invalidatePrefix(indexDir.toString + "@")

  private def loadSliced(fs: FileSystem, indexDir: Path, meta: IndexMeta): IndexVersion = {
    val file = new Path(new Path(indexDir, meta.dataDir), LayoutFile)
    try {
      val raw = RunReader.withoutChecksumFiles(fs)
      val length = raw.getFileStatus(file).getLen
      // Planning reads the layout's core only (LayoutCodec); its stats are read again on first use.
      val layout = LayoutCodec.load(length,
        (offset, n) => {
          val in = raw.open(file)
          try { val b = new Array[Byte](n); in.readFully(offset, b); b }
          finally in.close()
        })
      val problems = mutable.Buffer[String]()
      if (layout.numRowGroups * layout.columns.length.toLong != meta.entries)
        problems +=
          s"index version ${meta.version} holds ${layout.numRowGroups * layout.columns.length} entries, its commit " +
            s"says ${meta.entries}"
      // Segments must be there and have their length; anything else in the version's directory is ignored.
      val stored = layout.segments ++ layout.summaries.segments
      val expected = stored.map(s => s.file -> s.fileLength).toMap
      val present = stored.map(_.file.takeWhile(_ != '/')).distinct.flatMap { d =>
        try fs.listStatus(new Path(indexDir, d)).toSeq.map(st => s"$d/${st.getPath.getName}" -> st.getLen)
        catch { case NonFatal(_) => Nil }
      }.toMap
      val damaged = expected.collect {
        case (f, len) if !present.contains(f) =>
          problems += s"index segment $f is missing: the row groups it covers are read"; f
        case (f, len) if present(f) != len =>
          problems += s"index segment $f has ${present(f)} bytes, not $len: the row groups it covers are read"; f
      }.toSet
      try fs.listStatus(new Path(indexDir, meta.dataDir)).map(st => s"${meta.dataDir}/${st.getPath.getName}")
          .filterNot(f => expected.contains(f) || f.endsWith("/" + LayoutFile))
          .foreach(f => problems += s"unexpected file $f in the index is ignored")
      catch { case NonFatal(_) => }
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

  /** Writes a version's layout into its data directory. */
  def writeLayout(fs: FileSystem, indexDir: Path, dataDir: String, layout: Layout): Unit =
    writeNew(fs, new Path(new Path(indexDir, dataDir), LayoutFile), LayoutCodec.encode(layout))

  /**
   * Writes a file that must not exist yet. On the local file system through java.nio: Hadoop's local file system
   * (without its native library) forks a `chmod` for every file and `.crc` side file it creates, which costs more
   * than the write (maintenance on write commits a version per write). Index files carry their own CRCs.
   */
  def writeNew(fs: FileSystem, path: Path, bytes: Array[Byte]): Unit = fs match {
    case l: org.apache.hadoop.fs.LocalFileSystem =>
      java.nio.file.Files.write(l.pathToFile(path).toPath, bytes, java.nio.file.StandardOpenOption.CREATE_NEW,
        java.nio.file.StandardOpenOption.WRITE)
    case _ =>
      val out = fs.create(path, false)
      try out.write(bytes)
      finally out.close()
  }

  /** `fs.mkdirs`, without forking `chmod` on the local file system (see [[writeNew]]). */
  def mkdirs(fs: FileSystem, dir: Path): Unit = fs match {
    case l: org.apache.hadoop.fs.LocalFileSystem => java.nio.file.Files.createDirectories(l.pathToFile(dir).toPath)
    case _ => fs.mkdirs(dir)
  }

  def crc32(bytes: Array[Byte]): Long = { val c = new CRC32(); c.update(bytes); c.getValue }
}

class ConcurrentIndexUpdateException(msg: String) extends BloomIndexException(msg)
