package sparkbloom.index

import java.nio.charset.StandardCharsets
import java.util.zip.CRC32

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{DeserializationFeature, ObjectMapper}
import com.fasterxml.jackson.module.scala.DefaultScalaModule
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileContext, FileSystem, Options, Path}
import org.apache.parquet.example.data.Group
import org.apache.parquet.hadoop.ParquetReader
import org.apache.parquet.hadoop.example.GroupReadSupport
import org.slf4j.LoggerFactory

import sparkbloom.hash.ColumnEncoding
import sparkbloom.sbbf.Sbbf

/**
 * Where indexes live and how versions become visible.
 *
 * {{{
 *   <table root>/_sparkbloom/<name>/                (or <spark.sparkbloom.index.root>/<table hash>/<name>/)
 *     v<N>-<uuid>/part-*.parquet                    entries of version N (IndexData.schema)
 *     _commits/<N>.json                             IndexMeta of version N: the commit
 * }}}
 *
 * A build writes its entries into a fresh directory and then publishes `_commits/<N>.json` in one atomic
 * step that fails if N already exists (a hard link on local file systems, rename-without-overwrite
 * elsewhere). Readers use the highest commit whose data loads. An interrupted build leaves only an
 * unreferenced directory; two concurrent writers of N: one wins, the other gets a clear error.
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
      val md = java.security.MessageDigest.getInstance("SHA-1").digest(tableRoot.toString.getBytes(StandardCharsets.UTF_8))
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
    try mapper.readValue(in: java.io.InputStream, classOf[IndexMeta]) finally in.close()
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

  /** Publishes a version; fails with [[ConcurrentIndexUpdateException]] if it was published by another writer. */
  def commit(fs: FileSystem, conf: Configuration, indexDir: Path, meta: IndexMeta): Unit = {
    val dir = new Path(indexDir, CommitsDir)
    fs.mkdirs(dir)
    val tmp = new Path(dir, s".${meta.version}.${java.util.UUID.randomUUID()}.tmp")
    val out = fs.create(tmp, false)
    try out.write(mapper.writeValueAsBytes(meta)) finally out.close()
    val target = new Path(dir, s"${meta.version}.json")
    try {
      if (fs.getScheme == "file") {
        val t = java.nio.file.Paths.get(fs.pathToFile(target).toURI)
        java.nio.file.Files.createLink(t, java.nio.file.Paths.get(fs.pathToFile(tmp).toURI))
      } else FileContext.getFileContext(indexDir.toUri, conf).rename(tmp, target, Options.Rename.NONE)
    } catch {
      case _: java.nio.file.FileAlreadyExistsException | _: FileAlreadyExistsException =>
        throw new ConcurrentIndexUpdateException(s"bloom index ${meta.name} was updated concurrently: version " +
          s"${meta.version} was committed by another writer; nothing was changed by this one, retry the statement")
    } finally fs.delete(tmp, false)
  }

  private implicit class LocalFs(fs: FileSystem) {
    def pathToFile(p: Path): java.io.File = fs match {
      case l: org.apache.hadoop.fs.LocalFileSystem => l.pathToFile(p)
      case r: org.apache.hadoop.fs.RawLocalFileSystem => r.pathToFile(p)
      case _ => new java.io.File(p.toUri.getPath)
    }
  }

  // ---- loading, with a small cache keyed by (index dir, version) ----

  private val cache = new java.util.LinkedHashMap[String, LoadedIndex](16, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[String, LoadedIndex]): Boolean = size() > 16
  }

  def load(fs: FileSystem, conf: Configuration, indexDir: Path, meta: IndexMeta): LoadedIndex = {
    val key = s"$indexDir@${meta.version}@${meta.dataDir}"
    cache.synchronized(Option(cache.get(key))).getOrElse {
      val loaded = loadUncached(fs, conf, indexDir, meta)
      cache.synchronized(cache.put(key, loaded))
      loaded
    }
  }

  def invalidate(indexDir: Path): Unit = cache.synchronized {
    cache.keySet().removeIf(k => k.startsWith(indexDir.toString + "@"))
  }

  private def loadUncached(fs: FileSystem, conf: Configuration, indexDir: Path, meta: IndexMeta): LoadedIndex = {
    val problems = mutable.Buffer[String]()
    val dataDir = new Path(indexDir, meta.dataDir)
    val rows = mutable.Map[String, (Long, Long, Int, mutable.Map[Int, (RowGroupEntry)])]()
    val readConf = new Configuration(conf)
    readConf.setBoolean("parquet.page.verify-checksum.enabled", true)
    val parts = try fs.listStatus(dataDir).toSeq.filter(s => s.isFile && s.getPath.getName.endsWith(".parquet")) catch {
      case NonFatal(e) => problems += s"index data ${meta.dataDir} is missing: ${e.getMessage}"; Nil
    }
    var entries = 0L
    val damaged = mutable.Set[String]()
    for (part <- parts) {
      val local = mutable.Buffer[(String, Long, Long, Int, Int, Long, Long, Long, String, ColumnFilter)]()
      try {
        val reader = ParquetReader.builder(new GroupReadSupport(), part.getPath).withConf(readConf).build()
        try {
          var g: Group = reader.read()
          while (g != null) { local += decode(g, damaged); g = reader.read() }
        } finally reader.close()
      } catch {
        case NonFatal(e) => problems += s"index file ${part.getPath.getName} is unreadable (${e.getClass.getSimpleName}: ${e.getMessage}); the files it covers are read"
          local.clear()
      }
      for ((path, size, mtime, n, rg, start, end, numRows, col, cf) <- local) {
        entries += 1
        val f = rows.getOrElseUpdate(path, (size, mtime, n, mutable.Map()))
        val e = f._4.getOrElse(rg, RowGroupEntry(rg, start, end, numRows, Map.empty))
        f._4(rg) = e.copy(columns = e.columns + (col -> cf))
      }
    }
    val files = rows.iterator.flatMap { case (path, (size, mtime, expected, rgs)) =>
      val got = rgs.valuesIterator.map(_.columns.size).sum
      if (damaged.contains(path)) { problems += s"damaged bloom filter for $path: file is read"; None }
      else if (got != expected) { problems += s"incomplete index entries for $path ($got of $expected): file is read"; None }
      else Some(path -> IndexedFile(path, size, mtime, rgs.values.toIndexedSeq.sortBy(_.ordinal)))
    }.toMap
    if (entries != meta.entries && problems.isEmpty)
      problems += s"index version ${meta.version} holds $entries entries, its commit says ${meta.entries}"
    if (problems.nonEmpty) log.warn(s"bloom index ${meta.name} (${indexDir}): ${problems.mkString("; ")}")
    LoadedIndex(meta, files, problems.toSeq)
  }

  private def decode(g: Group, damaged: mutable.Set[String]) = {
    def str(f: String): String = if (g.getFieldRepetitionCount(f) == 0) null else g.getString(f, 0)
    val path = g.getString("file_path", 0)
    val bytes = if (g.getFieldRepetitionCount("bloom_filter") == 0) null else g.getBinary("bloom_filter", 0).getBytes
    val filter = if (bytes == null) null else {
      val crc = new CRC32(); crc.update(bytes)
      if (crc.getValue != g.getLong("bloom_crc32", 0) || bytes.length == 0 || bytes.length % 32 != 0) { damaged += path; null }
      else Sbbf.fromBytes(bytes)
    }
    val phys = str("physical_type")
    val enc = if (phys == null) null else ColumnEncoding(phys, Option(str("logical_type")).getOrElse(""),
      g.getInteger("type_length", 0), g.getBoolean("legacy_calendar", 0))
    (path, g.getLong("file_size", 0), g.getLong("file_mtime", 0), g.getInteger("file_entries", 0),
      g.getInteger("row_group", 0), g.getLong("rg_start", 0), g.getLong("rg_end", 0), g.getLong("num_rows", 0),
      g.getString("column", 0),
      ColumnFilter(enc, g.getBoolean("has_null", 0), g.getLong("non_null", 0), filter, g.getString("source", 0), g.getLong("ndv", 0)))
  }

  def crc32(bytes: Array[Byte]): Long = { val c = new CRC32(); c.update(bytes); c.getValue }
}

class ConcurrentIndexUpdateException(msg: String) extends BloomIndexException(msg)
