package sparkbloom.index

import java.util.zip.CRC32

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.parquet.example.data.Group
import org.apache.parquet.hadoop.ParquetReader
import org.apache.parquet.hadoop.example.GroupReadSupport
import org.slf4j.LoggerFactory

import sparkbloom.hash.ColumnEncoding
import sparkbloom.index.sliced.{EntryMeta, LayoutAssembler, Segment}
import sparkbloom.sbbf.Sbbf

/**
 * Versions written in format 1 (one Parquet row per entry, the bitset inline): read whole, as before, then
 * sliced in memory so planning has one probe path. REFRESH rebuilds them in the current format.
 */
private[index] object LegacyIndex {
  private val log = LoggerFactory.getLogger(getClass)

  def load(fs: FileSystem, conf: Configuration, indexDir: Path, meta: IndexMeta): IndexVersion = {
    val loaded = loadEntries(fs, conf, indexDir, meta)
    // One in-memory segment per (column, block count), written exactly as SegmentWriter would.
    val groups = mutable.LinkedHashMap[(String, Int), mutable.ArrayBuffer[Array[Byte]]]()
    val entries = for {
      f <- loaded.files.values.toSeq
      rg <- f.rowGroups
      (col, cf) <- rg.columns
    } yield {
      val (segment, slot) = if (cf.filter == null) (null, -1)
      else {
        val bytes = cf.filter.toBytes
        val g = groups.getOrElseUpdate((col, bytes.length / 32), mutable.ArrayBuffer())
        g += bytes
        (s"memory:$col:${bytes.length / 32}", g.size - 1)
      }
      val e = cf.encoding
      val fpp = if (cf.nonNull == 0) 0f else if (cf.filter == null) 1f else cf.filter.observedFpp.toFloat
      EntryMeta(f.path, f.size, f.mtime, rg.ordinal, rg.start, rg.end, rg.numRows, col,
        if (e == null) null else e.physical, if (e == null) null else e.logical, if (e == null) 0 else e.typeLength,
        e != null && e.rebase, cf.hasNull, cf.nonNull, cf.ndv, cf.source, fpp, segment, slot)
    }
    val memory = groups.map { case ((col, blocks), filters) =>
      s"memory:$col:$blocks" -> sliced.SegmentWriter.blockMajor(filters.toIndexedSeq, blocks)
    }.toMap
    val segments = groups.map { case ((col, blocks), filters) =>
      Segment(s"memory:$col:$blocks", col, blocks, filters.size)
    }.toSeq
    IndexVersion(meta, indexDir, LayoutAssembler.assemble(meta.columns.map(_.name), None, entries, segments), memory,
      loaded.problems)
  }

  private def loadEntries(fs: FileSystem, conf: Configuration, indexDir: Path, meta: IndexMeta): LoadedIndex = {
    val problems = mutable.Buffer[String]()
    val dataDir = new Path(indexDir, meta.dataDir)
    val rows = mutable.Map[String, (Long, Long, Int, mutable.Map[Int, (RowGroupEntry)])]()
    val readConf = new Configuration(conf)
    readConf.setBoolean("parquet.page.verify-checksum.enabled", true)
    val parts = try fs.listStatus(dataDir).toSeq.filter(s => s.isFile && s.getPath.getName.endsWith(".parquet"))
    catch {
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
        case NonFatal(e) =>
          problems +=
            s"index file ${part.getPath.getName} is unreadable (${e.getClass.getSimpleName}: ${e.getMessage}); the " +
              "files it covers are read"
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
      else if (got != expected) {
        problems += s"incomplete index entries for $path ($got of $expected): file is read"; None
      } else Some(path -> IndexedFile(path, size, mtime, rgs.values.toIndexedSeq.sortBy(_.ordinal)))
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
    val filter = if (bytes == null) null
    else {
      val crc = new CRC32(); crc.update(bytes)
      if (crc.getValue != g.getLong("bloom_crc32", 0) || bytes.length == 0 || bytes.length % 32 != 0) {
        damaged += path; null
      } else Sbbf.fromBytes(bytes)
    }
    val phys = str("physical_type")
    val enc = if (phys == null) null
    else ColumnEncoding(phys, Option(str("logical_type")).getOrElse(""),
      g.getInteger("type_length", 0), g.getBoolean("legacy_calendar", 0))
    (path, g.getLong("file_size", 0), g.getLong("file_mtime", 0), g.getInteger("file_entries", 0),
      g.getInteger("row_group", 0), g.getLong("rg_start", 0), g.getLong("rg_end", 0), g.getLong("num_rows", 0),
      g.getString("column", 0),
      ColumnFilter(enc, g.getBoolean("has_null", 0), g.getLong("non_null", 0), filter, g.getString("source", 0),
        g.getLong("ndv", 0)))
  }

}
